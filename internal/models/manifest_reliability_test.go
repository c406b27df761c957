package models

import (
	"os"
	"testing"
)

// FuzzParseManifest: a model manifest of any content is parsed or refused with an error, never a
// panic.
func FuzzParseManifest(f *testing.F) {
	if b, err := os.ReadFile("../../models/manifest.json"); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"models":[{"name":"a","file":"a.onnx"}]}`))
	f.Add([]byte(`{"models":[{"name":"a","file":"a.onnx"},{"name":"a","file":"b.onnx"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseManifest(b)
		if err == nil && m == nil {
			t.Fatal("nil manifest without an error")
		}
	})
}
