// Command racefree splits the module's packages into those whose tests can race and those whose
// tests run on one goroutine, so that make test runs only the first under the race detector.
//
// The race detector reports unsynchronised accesses from two goroutines; a package whose tests
// never run two goroutines can report nothing, yet runs 5–10× slower under it (BATCH's analytic
// optimiser: 283 s with -race against 30 s without on the shared 2-core machine). A package is
// single-goroutine when none of its files, tests included, has a go statement or calls
// t.Parallel or time.AfterFunc, it and its tests import nothing that runs goroutines on its
// behalf (network, processes, signals, gRPC, Kubernetes clients), and the code (not the tests) of
// every package of this module it or its tests import is likewise free of them. The decision floors (ARCHITECTURE.md, Layout) are such packages by
// construction; the check is on the code, so a package that starts a goroutine tomorrow is raced
// again without anyone editing the Makefile.
//
//	go run ./tools/racefree            # the single-goroutine packages, one import path per line
//	go run ./tools/racefree -invert    # every other package: the ones go test -race runs
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// goroutineImports start goroutines for their callers (servers, clients, processes, signal
// delivery); a package importing one is raced.
var goroutineImports = []string{"net", "os/exec", "os/signal", "google.golang.org/grpc", "k8s.io/client-go", "sigs.k8s.io/"}

// pkg is one package as go list describes it, with the verdicts.
type pkg struct {
	ImportPath                         string
	Dir                                string
	GoFiles, CgoFiles                  []string
	TestGoFiles, XTestGoFiles          []string
	Imports, TestImports, XTestImports []string

	code, tests verdict // its non-test files alone; with its tests
}

// verdict is a judgement of some files: not yet, in progress, or done with why ("" = single).
type verdict struct {
	state int // 0 not judged, 1 being judged, 2 judged
	why   string
}

func main() {
	invert := flag.Bool("invert", false, "print the packages that can race instead")
	explain := flag.Bool("v", false, "print each raced package's reason on stderr")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "racefree: unexpected argument %q\n", flag.Arg(0))
		os.Exit(2)
	}
	m, err := list()
	if err != nil {
		fmt.Fprintln(os.Stderr, "racefree:", err)
		os.Exit(1)
	}
	for _, p := range m.order {
		why, err := m.tested(p)
		if err != nil {
			fmt.Fprintln(os.Stderr, "racefree:", err)
			os.Exit(1)
		}
		if *explain && why != "" {
			fmt.Fprintf(os.Stderr, "%s: %s\n", p.ImportPath, why)
		}
		if (why == "") != *invert {
			fmt.Println(p.ImportPath)
		}
	}
}

type module struct {
	byPath map[string]*pkg
	order  []*pkg
}

// list reads the module's packages from go list.
func list() (*module, error) {
	out, err := exec.Command("go", "list", "-json", "./...").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("go list: %v: %s", err, ee.Stderr)
		}
		return nil, fmt.Errorf("go list: %w", err)
	}
	m := &module{byPath: map[string]*pkg{}}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		p := &pkg{}
		if err := dec.Decode(p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list output: %w", err)
		}
		m.byPath[p.ImportPath] = p
		m.order = append(m.order, p)
	}
	return m, nil
}

// tested is why p's tests can race, "" when they cannot: its test files and test imports, then
// its code.
func (m *module) tested(p *pkg) (string, error) {
	return m.judge(&p.tests, p, concat(p.TestGoFiles, p.XTestGoFiles), concat(p.TestImports, p.XTestImports), func() (string, error) { return m.coded(p) })
}

// coded is why p's non-test code can start goroutines, "" when it cannot.
func (m *module) coded(p *pkg) (string, error) {
	return m.judge(&p.code, p, concat(p.GoFiles, p.CgoFiles), p.Imports, func() (string, error) { return "", nil })
}

// judge decides v from files, the imports and then rest: a goroutine-starting import, a file
// that starts goroutines, a package of the module whose code does.
func (m *module) judge(v *verdict, p *pkg, files, imports []string, rest func() (string, error)) (string, error) {
	switch v.state {
	case 1:
		return "", nil // an import cycle (x_test): judged by the other files
	case 2:
		return v.why, nil
	}
	v.state = 1
	why, err := m.reason(p, files, imports)
	if err == nil && why == "" {
		why, err = rest()
	}
	if err != nil {
		return "", err
	}
	v.state, v.why = 2, why
	return why, nil
}

func (m *module) reason(p *pkg, files, imports []string) (string, error) {
	for _, im := range imports {
		for _, g := range goroutineImports {
			if im == g || strings.HasPrefix(im, g+"/") || (strings.HasSuffix(g, "/") && strings.HasPrefix(im, g)) {
				return "imports " + im, nil
			}
		}
	}
	for _, f := range files {
		why, err := goroutines(filepath.Join(p.Dir, f))
		if err != nil || why != "" {
			return why, err
		}
	}
	for _, im := range imports {
		q, ok := m.byPath[im]
		if !ok || q == p {
			continue
		}
		why, err := m.coded(q)
		if err != nil {
			return "", err
		}
		if why != "" {
			return "imports " + strings.TrimPrefix(im, "github.com/sloserve/sloserve/") + " (" + why + ")", nil
		}
	}
	return "", nil
}

func concat(a, b []string) []string { return append(append([]string(nil), a...), b...) }

// goroutines returns where file starts a goroutine (a go statement, t.Parallel, time.AfterFunc),
// "" when it does not.
func goroutines(file string) (string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
	if err != nil {
		return "", err
	}
	var why string
	ast.Inspect(f, func(n ast.Node) bool {
		if why != "" {
			return false
		}
		switch n := n.(type) {
		case *ast.GoStmt:
			why = fmt.Sprintf("%s: go statement", filepath.Base(fset.Position(n.Pos()).String()))
		case *ast.SelectorExpr:
			if n.Sel.Name == "Parallel" || n.Sel.Name == "AfterFunc" {
				why = fmt.Sprintf("%s: calls %s", filepath.Base(fset.Position(n.Pos()).String()), n.Sel.Name)
			}
		}
		return true
	})
	return why, nil
}
