package tune

import (
	"os"
	"testing"
)

// FuzzCacheFile: whatever a cache file holds (a torn write, another program's file), Get never
// panics, and it answers only for an entry naming its own key.
func FuzzCacheFile(f *testing.F) {
	f.Add([]byte(`{"key":"k","value":{"attainment":0.99,"cost":1.5}}`))
	f.Add([]byte(`{"key":"other","value":{"attainment":1}}`))
	f.Add([]byte(`{"key":"k","value":`))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		c := NewCache(t.TempDir(), "salt")
		if err := os.WriteFile(c.file("k"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		var o Outcome
		if c.Get("k", &o) {
			var again Outcome
			if !c.Get("k", &again) || again != o {
				t.Errorf("second Get: %+v, want %+v", again, o)
			}
		}
		if c.Get("other", &o) {
			t.Errorf("Get of a key never written answered")
		}
	})
}
