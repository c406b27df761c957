package main

import "context"

func runReport(ctx context.Context, args []string, e env) error { return notYet("report") }
