package experiment

import (
	"bytes"
	"os"
	"testing"
)

// FuzzParseFileConfig: a simulation config file of any content is parsed or refused with an
// error, never a panic.
func FuzzParseFileConfig(f *testing.F) {
	for _, p := range []string{"../../examples/sim-mlproxy-toxic.yaml", "../../examples/sim-mlproxy-toxic-slow.yaml"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("policy: {name: fixed}\n"))
	f.Add([]byte("{"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseFileConfig(bytes.NewReader(b))
		if err == nil && c == nil {
			t.Fatal("nil config without an error")
		}
	})
}
