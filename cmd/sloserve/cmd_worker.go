package main

import "context"

func runWorker(ctx context.Context, args []string, e env) error { return notYet("worker") }
