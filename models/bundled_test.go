package bundled

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"testing"
)

func TestManifestMatchesFiles(t *testing.T) {
	man, err := Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if got := len(man.Models); got < 6 {
		t.Errorf("bundled models (-want +got): -≥6 +%d", got)
	}
	for _, mi := range man.Models {
		t.Run(mi.Name, func(t *testing.T) {
			b, err := Model(mi.Name)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(b)
			if got := hex.EncodeToString(sum[:]); got != mi.SHA256 {
				t.Errorf("sha256 of %s (-want +got):\n-%s\n+%s (re-run `make models`)", mi.File, mi.SHA256, got)
			}
			if mi.Accuracy < 0.8 || mi.Accuracy > 0.95 || len(mi.ClassAccuracy) != 10 {
				t.Errorf("accuracy %.4f with %d per-class values, want 0.8..0.95 and 10", mi.Accuracy, len(mi.ClassAccuracy))
			}
		})
	}
	var params []int64
	for _, role := range []string{"small", "medium", "large"} {
		mi, ok := man.Model(man.Serving[role])
		if !ok {
			t.Fatalf("serving role %q names no bundled model", role)
		}
		params = append(params, mi.Params)
	}
	if !(params[0]*4 <= params[1] && params[1]*2 <= params[2]) {
		t.Errorf("serving models' sizes %v are not clearly different (small ×4 ≤ medium, medium ×2 ≤ large)", params)
	}
}

func TestSampleIsStratified(t *testing.T) {
	s, err := Sample()
	if err != nil {
		t.Fatal(err)
	}
	count := make([]int, 10)
	for _, l := range s.Labels {
		count[l]++
	}
	for k, c := range count {
		if c != 100 {
			t.Errorf("class %d has %d sample images, want 100", k, c)
		}
	}
}

func TestBundleIsSmall(t *testing.T) {
	var total int64
	err := fs.WalkDir(FS(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			total += info.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if total > 15<<20 {
		t.Errorf("bundled files total %d bytes, want < 15 MiB", total)
	}
}

// TestFamilyIsDiverse: Cocktail's gains need members whose errors differ; the bundle once held
// only MLPs over the same pixels (issue #18, item 13). It must include convolutional nets, a
// kernel machine (random features: Cos) and a fixed-filter view (HOG-like), every one trained
// with a validation accuracy recorded, and a validation sample of held-out training images.
func TestFamilyIsDiverse(t *testing.T) {
	man, err := Manifest()
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string][]string{}
	for _, mi := range man.Models {
		for _, op := range mi.Operators {
			kinds[op] = append(kinds[op], mi.Name)
		}
		if mi.ValidationAccuracy < 0.8 || mi.ValidationAccuracy > 0.95 {
			t.Errorf("%s: validation accuracy %.4f, want 0.8..0.95", mi.Name, mi.ValidationAccuracy)
		}
	}
	if len(kinds["Conv"]) < 3 || len(kinds["Cos"]) < 1 {
		t.Errorf("models with Conv %v and Cos %v: want ≥ 3 convolutional (CNNs, HOG view) and ≥ 1 random-features model", kinds["Conv"], kinds["Cos"])
	}
	v, err := Validation()
	if err != nil {
		t.Fatal(err)
	}
	count := make([]int, 10)
	for _, l := range v.Labels {
		count[l]++
	}
	for k, c := range count {
		if c != 200 {
			t.Errorf("class %d has %d validation images, want 200", k, c)
		}
	}
}
