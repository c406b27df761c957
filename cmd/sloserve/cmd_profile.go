package main

import "context"

func runProfile(ctx context.Context, args []string, e env) error { return notYet("profile") }
