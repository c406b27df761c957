package main

import "context"

func runPlan(ctx context.Context, args []string, e env) error { return notYet("plan") }
