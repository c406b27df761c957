package main

import "context"

func runTrain(ctx context.Context, args []string, e env) error { return notYet("train") }
