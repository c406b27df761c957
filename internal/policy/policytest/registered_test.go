package policytest

import (
	"testing"

	"github.com/sloserve/sloserve/internal/policy"
	_ "github.com/sloserve/sloserve/internal/policy/builtin"
)

// Every registered policy passes its port's conformance suite.
func TestRegistered(t *testing.T) {
	specs := policy.Specs()
	if len(specs) == 0 {
		t.Fatal("no policy registered")
	}
	for _, s := range specs {
		t.Run(string(s.Port)+"/"+s.Name, func(t *testing.T) {
			if s.Doc == "" {
				t.Errorf("%s: no Doc", s.Name)
			}
			if s.Options != nil {
				o := s.Options()
				p, err := s.New(policy.Env{}, o)
				if err != nil || p == nil {
					t.Fatalf("%s: New(its own default Options) = %v, %v", s.Name, p, err)
				}
			}
			switch s.Port {
			case policy.PortCluster:
				Cluster(t, s.Name)
			case policy.PortModel:
				Model(t, s.Name)
			case policy.PortEnsemble:
				Ensemble(t, s.Name)
			default:
				t.Errorf("%s: port %q has no conformance suite", s.Name, s.Port)
			}
		})
	}
}
