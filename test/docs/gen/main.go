// Command gen rewrites docs/config.md from the configuration structs: go run ./test/docs/gen.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/sloserve/sloserve/test/docs"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run() error {
	root, err := docs.Root()
	if err != nil {
		return err
	}
	md, err := docs.Render(root)
	if err != nil {
		return err
	}
	path := filepath.Join(root, docs.ConfigDoc)
	if err := os.WriteFile(path, []byte(md), 0o644); err != nil {
		return err
	}
	fmt.Println("wrote", path)
	return nil
}
