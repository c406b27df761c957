// Package builtin registers every policy sloserve ships with policy.Register: a program that
// builds policies by name (the serving stack, the simulator, the command line) imports it once.
package builtin

import (
	_ "github.com/sloserve/sloserve/internal/policy/batch"     // batch
	_ "github.com/sloserve/sloserve/internal/policy/cocktail"  // cocktail, clipper, infaas and ablations (ensemble port)
	_ "github.com/sloserve/sloserve/internal/policy/fixed"     // fixed
	_ "github.com/sloserve/sloserve/internal/policy/infless"   // infless and its ablations
	_ "github.com/sloserve/sloserve/internal/policy/knative"   // knative
	_ "github.com/sloserve/sloserve/internal/policy/lambda"    // lambda
	_ "github.com/sloserve/sloserve/internal/policy/mark"      // mark
	_ "github.com/sloserve/sloserve/internal/policy/mlproxy"   // mlproxy
	_ "github.com/sloserve/sloserve/internal/policy/sagemaker" // sagemaker
	_ "github.com/sloserve/sloserve/internal/policy/sloserve"  // sloserve, on a model and on a cluster
	_ "github.com/sloserve/sloserve/internal/policy/uniform"   // uniform, openfaas+
)
