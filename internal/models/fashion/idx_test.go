package fashion

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"testing"
)

func tinySet() *Set {
	s := &Set{Images: make([]byte, 3*Pixels), Labels: []uint8{0, 9, 4}}
	for i := range s.Images {
		s.Images[i] = byte(i * 7)
	}
	return s
}

func TestSampleRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteSample(&buf, tinySet()); err != nil {
		t.Fatal(err)
	}
	got, err := ReadSample(buf.Bytes())
	if err != nil {
		t.Fatalf("ReadSample: %v", err)
	}
	if want := tinySet(); !reflect.DeepEqual(want, got) {
		t.Errorf("round trip mismatch (-want +got): labels -%v +%v", want.Labels, got.Labels)
	}
	if got, want := got.Floats(nil, 1, 2)[1], float32(tinySet().Images[Pixels+1])/255; got != want {
		t.Errorf("Floats()[1] (-want +got): -%v +%v", want, got)
	}
}

func TestReadIDXRejects(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"bad magic", []byte{1, 0, 8, 1, 0, 0, 0, 0}},
		{"float elements", []byte{0, 0, 0x0d, 1, 0, 0, 0, 0}},
		{"two dims", []byte{0, 0, 8, 2, 0, 0, 0, 1, 0, 0, 0, 1, 5}},
		{"short data", []byte{0, 0, 8, 1, 0, 0, 0, 3, 1, 2}},
		{"huge header", []byte{0, 0, 8, 3, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 28, 0, 0, 0, 28}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := ReadIDX(bytes.NewReader(tc.in)); !errors.Is(err, ErrFormat) {
				t.Errorf("ReadIDX error = %v, want ErrFormat", err)
			}
		})
	}
}

func TestLoadDebianDataset(t *testing.T) {
	if _, err := os.Stat(DefaultDir); err != nil {
		t.Skipf("Fashion-MNIST not installed at %s (Debian package dataset-fashion-mnist)", DefaultDir)
	}
	s, err := Load(DefaultDir, "t10k")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Len(), 10000; got != want {
		t.Errorf("t10k size (-want +got): -%d +%d", want, got)
	}
}

func FuzzReadIDX(f *testing.F) {
	var buf bytes.Buffer
	_ = writeIDX(&buf, tinySet())
	f.Add(buf.Bytes())
	f.Add([]byte{0, 0, 8, 1, 0, 0, 0, 2, 3, 4})
	f.Fuzz(func(t *testing.T, b []byte) {
		dims, data, err := ReadIDX(bytes.NewReader(b))
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error does not wrap ErrFormat: %v", err)
			}
			return
		}
		n := 1
		for _, d := range dims {
			n *= d
		}
		if n != len(data) {
			t.Fatalf("dims %v but %d bytes", dims, len(data))
		}
	})
}

func FuzzReadSample(f *testing.F) {
	var buf bytes.Buffer
	_ = WriteSample(&buf, tinySet())
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ReadSample(b)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error does not wrap ErrFormat: %v", err)
			}
			return
		}
		if len(s.Images) != s.Len()*Pixels {
			t.Fatalf("%d labels but %d pixels", s.Len(), len(s.Images))
		}
	})
}
