package experiment

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sloserve/sloserve/internal/sim"
)

func TestExampleConfigs(t *testing.T) {
	files, _ := filepath.Glob("../../examples/sim-*.yaml")
	if len(files) == 0 {
		t.Fatal("no examples/sim-*.yaml")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			c, err := LoadFileConfig(f)
			if err != nil {
				t.Fatal(err)
			}
			cfg := sim.DefaultConfig()
			if err := c.Apply(&cfg); err != nil {
				t.Fatal(err)
			}
			if _, err := c.LoadCatalog(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat("../../../shared/data/profiles"); err != nil {
				t.Skip("shared data absent; model profiles not checked")
			}
			if _, err := c.LoadModel(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestParseFileConfigErrors(t *testing.T) {
	for _, in := range []string{"bogus: 1", "policies: {nosuch: {}}", "slo: {threshold: soon}"} {
		if _, err := ParseFileConfig(strings.NewReader(in)); err == nil {
			t.Errorf("ParseFileConfig(%q) succeeded, want an error", in)
		}
	}
}
