package main

import "context"

func runForecast(ctx context.Context, args []string, e env) error { return notYet("forecast") }
