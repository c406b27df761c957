package main

import "context"

func runServe(ctx context.Context, args []string, e env) error { return notYet("serve") }
