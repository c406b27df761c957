package main

import "context"

func runLoad(ctx context.Context, args []string, e env) error { return notYet("load") }
