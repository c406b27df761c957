package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

// TestValidateUsageErrors: a bad flag of `sloserve validate` is a usage error (exit 2) naming it.
func TestValidateUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"--duration", "1s"}, "--duration"},
		{[]string{"--traces", "nope"}, "--traces"},
		{[]string{"--policies", "mark,nope"}, "--policies"},
		{[]string{"--max-instances", "0"}, "--max-instances"},
		{[]string{"--worker-rps", "-1"}, "--worker-rps"},
		{[]string{"--slo-ms", "0"}, "--slo-ms"},
		{[]string{"--serverless"}, "--serverless"},
		{[]string{"--live-runs", "0"}, "--live-runs"},
	} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), append([]string{"validate"}, tc.args...), nil, &out, &errOut)
		var ue *usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.flag) {
			t.Errorf("validate %v: error %v, want a usage error naming %s", tc.args, err, tc.flag)
		}
	}
}
