package main

import "context"

func runSim(ctx context.Context, args []string, e env) error { return notYet("sim") }
