package main

import "context"

func runEnsemble(ctx context.Context, args []string, e env) error { return notYet("ensemble") }
