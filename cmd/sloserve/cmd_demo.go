package main

import "context"

func runDemo(ctx context.Context, args []string, e env) error { return notYet("demo") }
