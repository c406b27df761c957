package measure

import (
	"errors"
	"os"
	"testing"

	"github.com/sloserve/sloserve/internal/models/fashion"
	"github.com/sloserve/sloserve/internal/models/train"
)

func TestLoad(t *testing.T) {
	tiny := &fashion.Set{Images: make([]byte, 2*fashion.Pixels), Labels: []uint8{3, 7}}
	tiny.Images[fashion.Pixels] = 255
	sample := func() (*fashion.Set, error) { return tiny, nil }
	s, err := Load(DataSample, "", sample)
	if err != nil {
		t.Fatal(err)
	}
	if s.Dim != fashion.Pixels || len(s.X) != 2*fashion.Pixels || s.X[fashion.Pixels] != 1 || s.Labels[0] != 3 || s.Labels[1] != 7 {
		t.Errorf("Load(sample) = dim %d, %d values, x[784] %v, labels %v; want 784, 1568, 1, [3 7]", s.Dim, len(s.X), s.X[fashion.Pixels], s.Labels)
	}
	if _, err := Load("most", "", sample); err == nil {
		t.Error("Load accepted an unknown data set name")
	}
	if _, err := Load(DataSample, "", func() (*fashion.Set, error) { return nil, errors.New("gone") }); err == nil {
		t.Error("Load hid the sample loader's error")
	}
	if _, err := Load(DataFull, t.TempDir(), sample); err == nil {
		t.Error("Load(full) of an empty directory returned no error")
	}
}

func TestLoadFull(t *testing.T) {
	if _, err := os.Stat(fashion.DefaultDir); err != nil {
		t.Skipf("Fashion-MNIST not installed at %s (Debian package dataset-fashion-mnist)", fashion.DefaultDir)
	}
	s, err := Load(DataFull, fashion.DefaultDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	count := make([]int, fashion.NumClasses)
	for _, l := range s.Labels {
		count[l]++
	}
	for k, c := range count {
		if c != 1000 {
			t.Errorf("class %d has %d test images, want 1000", k, c)
		}
	}
}

func TestLoadValidation(t *testing.T) {
	tiny := &fashion.Set{Images: make([]byte, fashion.Pixels), Labels: []uint8{4}}
	s, err := LoadValidation(DataSample, "", func() (*fashion.Set, error) { return tiny, nil })
	if err != nil || len(s.Labels) != 1 || s.Labels[0] != 4 {
		t.Errorf("LoadValidation(sample) = %v labels, %v; want [4]", s.Labels, err)
	}
	if _, err := LoadValidation("most", "", nil); err == nil {
		t.Error("LoadValidation accepted an unknown data set name")
	}
	if _, err := os.Stat(fashion.DefaultDir); err != nil {
		t.Skipf("Fashion-MNIST not installed at %s", fashion.DefaultDir)
	}
	full, err := LoadValidation(DataFull, fashion.DefaultDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(full.Labels) != train.ValidationSplit {
		t.Errorf("full validation split (-want +got): -%d +%d images", train.ValidationSplit, len(full.Labels))
	}
}
