// Package floors checks the layering of docs/architecture.md (../shared/ARCHITECTURE.md,
// "Layout"): every package stands on a floor and imports only packages on its own floor or
// lower; the decision floors (vocabulary, decisions, policies) import no runtime — no network,
// processes or Kubernetes — and never read the wall clock, sleep or start goroutines, so that the
// live runtime and the simulator drive the same code on their own clocks; and nothing but the
// command line, the experiments and the simulator's own tests imports the simulator.
package floors

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/sloserve/sloserve/"

// The floors, from the ground up.
const (
	vocabulary = 1 // words every layer speaks
	decisions  = 2 // pure decision pieces
	policies   = 3 // the policies that combine them, and their registry
	runtime    = 4 // the live runtime
	simulator  = 5 // the simulator
	top        = 6 // composition, experiments, reports, the command line, tests
)

// floorOf maps a package (path under the module) to its floor: the longest prefix wins. A package
// without an entry fails the test, so a new package is placed on purpose.
var floorOf = map[string]int{
	"internal/slo":     vocabulary,
	"internal/timex":   vocabulary, // time arithmetic, no clock
	"internal/cost":    vocabulary,
	"internal/profile": vocabulary,
	"internal/trace":   vocabulary,
	"internal/cluster": vocabulary,
	// The fleet's vocabulary (Spec, Tier, State, Member) and the Provider port; the providers
	// themselves are runtime.
	"internal/provider":       vocabulary,
	"internal/provider/local": runtime,
	// The function tier shared by the providers (pools, keep-alive, cold starts, billing).
	"internal/provider/functions":  runtime,
	"internal/provider/kubernetes": runtime,
	// The ONNX file format (protobuf, no runtime): operator profiles read model graphs.
	"internal/models/onnx": vocabulary,

	"internal/batching":  decisions,
	"internal/admission": decisions,
	"internal/dispatch":  decisions,
	"internal/forecast":  decisions,
	"internal/keepalive": decisions,
	"internal/slomon":    decisions,
	"internal/analytic":  decisions,
	"internal/planner":   decisions,
	"internal/ensemble":  decisions,
	"internal/autoscale": decisions,
	// Measures members' per-class accuracies by running the bundled networks (offline).
	"internal/ensemble/measure": runtime,

	"internal/policy": policies,

	"internal/oip":        runtime,
	"internal/oipgrpc":    runtime,
	"internal/adapters":   runtime,
	"internal/config":     runtime,
	"internal/batcher":    runtime,
	"internal/gateway":    runtime,
	"internal/controller": runtime,
	// Several gateway replicas: the Lease (leader election) and the replicas' shared facts.
	"internal/controller/leader":            runtime,
	"internal/controller/leader/leadertest": runtime,
	"internal/controller/facts":             runtime,
	"internal/worker":                       runtime,
	"internal/models":                       runtime,
	"models":                                runtime,
	"internal/load":                         runtime,
	"internal/dashboard":                    runtime,
	"internal/chaos":                        runtime,
	"internal/repository":                   runtime,
	"internal/telemetry":                    runtime,
	// The gateway's live ensembles (fan-out to the members' batchers).
	"internal/gateway/fanout": runtime,
	// The gateway's model-repository manager (load, reload, unload).
	"internal/gateway/modelrepo": runtime,
	// The gateway's measurements (Prometheus series, Triton statistics).
	"internal/gateway/metrics": runtime,
	// Helpers the gateway's and the serving stack's tests share (imported by tests only).
	"internal/gateway/gatewaytest": runtime,

	"internal/sim": simulator,

	"internal/app":        top,
	"internal/experiment": top,
	// sloserve validate: the live stack and the simulator on the same segments (issue #16).
	"internal/experiment/validate": top,
	"internal/report":              top,
	"cmd":                          top,
	"test":                         top,
	"tools":                        top,
}

// exceptions are imports that break the floors knowingly, "from -> to" with the reason; the
// list only shrinks.
var exceptions = map[string]string{}

// runtimeImports are what a decision-floor package must not import: network, processes,
// Kubernetes, gRPC.
var runtimeImports = []string{"net", "net/http", "os/exec", "google.golang.org/grpc", "k8s.io/", "sigs.k8s.io/"}

// clockCalls are the functions of package time a decision-floor package must not call.
var clockCalls = map[string]bool{"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true,
	"AfterFunc": true, "Tick": true, "NewTicker": true, "NewTimer": true}

type pkg struct {
	dir     string   // under the module root
	imports []string // full import paths, non-test files
	files   []*ast.File
	fset    *token.FileSet
}

func floor(t *testing.T, rel string) int {
	t.Helper()
	best, f := "", 0
	for p, fl := range floorOf {
		if (rel == p || strings.HasPrefix(rel, p+"/")) && len(p) > len(best) {
			best, f = p, fl
		}
	}
	return f
}

// load parses every package's non-test files under the module root.
func load(t *testing.T) map[string]*pkg {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*pkg{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin" || name == "deploy" || name == "docs") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		rel = filepath.ToSlash(rel)
		p := out[rel]
		if p == nil {
			p = &pkg{dir: rel, fset: token.NewFileSet()}
			out[rel] = p
		}
		f, err := parser.ParseFile(p.fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		p.files = append(p.files, f)
		for _, im := range f.Imports {
			s, _ := strconv.Unquote(im.Path.Value)
			p.imports = append(p.imports, s)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 20 {
		t.Fatalf("found %d packages under %s: wrong root?", len(out), root)
	}
	return out
}

// Every package imports only packages on its own floor or lower, and only cmd/, the experiments
// (internal/experiment) and the simulator's own packages import the simulator.
func TestFloors(t *testing.T) {
	pkgs := load(t)
	dirs := make([]string, 0, len(pkgs))
	for d := range pkgs {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		fl := floor(t, d)
		if fl == 0 {
			t.Errorf("%s: on no floor; add it to floorOf", d)
			continue
		}
		for _, im := range pkgs[d].imports {
			rel, ok := strings.CutPrefix(im, module)
			if !ok {
				continue
			}
			if _, ok := exceptions[d+" -> "+rel]; ok {
				continue
			}
			if g := floor(t, rel); g > fl {
				t.Errorf("%s (floor %d) imports %s (floor %d)", d, fl, rel, g)
			}
			if (rel == "internal/sim" || strings.HasPrefix(rel, "internal/sim/")) && !strings.HasPrefix(d, "cmd/") && !strings.HasPrefix(d, "internal/sim") && d != "internal/experiment" && !strings.HasPrefix(d, "internal/experiment/") && !strings.HasPrefix(d, "test/") {
				t.Errorf("%s imports the simulator %s: only cmd/ and the experiments may", d, rel)
			}
		}
	}
}

// Decision-floor packages import no runtime, read no wall clock, never sleep and start no
// goroutines.
func TestDecisionsArePure(t *testing.T) {
	pkgs := load(t)
	for d, p := range pkgs {
		if fl := floor(t, d); fl == 0 || fl > policies {
			continue
		}
		for _, im := range p.imports {
			for _, bad := range runtimeImports {
				if im == bad || (strings.HasSuffix(bad, "/") && strings.HasPrefix(im, bad)) || strings.HasPrefix(im, bad+"/") {
					if _, ok := exceptions[d+" -> "+im]; !ok {
						t.Errorf("%s (a decision package) imports %s", d, im)
					}
				}
			}
		}
		for _, f := range p.files {
			timeName := ""
			for _, im := range f.Imports {
				if s, _ := strconv.Unquote(im.Path.Value); s == "time" {
					timeName = "time"
					if im.Name != nil {
						timeName = im.Name.Name
					}
				}
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.GoStmt:
					t.Errorf("%s: starts a goroutine", p.fset.Position(n.Pos()))
				case *ast.SelectorExpr:
					if id, ok := n.X.(*ast.Ident); ok && timeName != "" && id.Name == timeName && clockCalls[n.Sel.Name] {
						t.Errorf("%s: calls time.%s", p.fset.Position(n.Pos()), n.Sel.Name)
					}
				}
				return true
			})
		}
	}
}

// The checks can fail: a decision package that reads the clock, starts a goroutine or imports
// net/http, and a runtime package that imports the simulator, are each reported.
func TestFloorsCatchViolations(t *testing.T) {
	dir := t.TempDir()
	src := `package bad

import (
	"net/http"
	"time"

	"github.com/sloserve/sloserve/internal/sim"
)

var _ = http.MethodGet
var _ = sim.Run

func f() { go func() {}(); _ = time.Now() }
`
	path := filepath.Join(dir, "bad.go")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			found = append(found, "go")
		case *ast.SelectorExpr:
			if id, ok := n.X.(*ast.Ident); ok && id.Name == "time" && clockCalls[n.Sel.Name] {
				found = append(found, "time."+n.Sel.Name)
			}
		}
		return true
	})
	if strings.Join(found, ",") != "go,time.Now" {
		t.Errorf("the purity scan found %v in a file with a goroutine and time.Now", found)
	}
	if g := floor(t, "internal/gateway"); g <= floor(t, "internal/policy") || floor(t, "internal/sim") <= g {
		t.Errorf("floors: gateway %d, policy %d, sim %d: want policy < gateway < sim", g, floor(t, "internal/policy"), floor(t, "internal/sim"))
	}
}
