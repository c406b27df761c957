package main

import "context"

func runBench(ctx context.Context, args []string, e env) error { return notYet("bench") }
