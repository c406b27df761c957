package fashion

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Rows and Cols are the size of one Fashion-MNIST image; Pixels = Rows×Cols.
const (
	Rows   = 28
	Cols   = 28
	Pixels = Rows * Cols
)

// NumClasses is the number of Fashion-MNIST classes.
const NumClasses = 10

// ClassNames are the Fashion-MNIST class labels, indexed by class id.
var ClassNames = [NumClasses]string{
	"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
	"Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
}

// DefaultDir is where the Debian package dataset-fashion-mnist installs the data set.
const DefaultDir = "/usr/share/datasets/fashion-mnist"

// ErrFormat is wrapped by every error caused by bytes that are not a valid idx file.
var ErrFormat = errors.New("fashion: bad idx data")

// maxItems bounds the item count accepted from an idx header (Fashion-MNIST has 70k in all).
const maxItems = 1 << 20

// Set is a labelled set of images: Images holds N×Pixels bytes (0 = background, 255 = ink), row-major.
type Set struct {
	Images []byte
	Labels []uint8
}

// Len returns the number of images.
func (s *Set) Len() int { return len(s.Labels) }

// Image returns the pixels of image i.
func (s *Set) Image(i int) []byte { return s.Images[i*Pixels : (i+1)*Pixels] }

// Floats writes the images [from, to) into dst as float32 pixel/255 (the models' input scale) and
// returns it; dst is grown when too small.
func (s *Set) Floats(dst []float32, from, to int) []float32 {
	n := (to - from) * Pixels
	if cap(dst) < n {
		dst = make([]float32, n)
	}
	dst = dst[:n]
	for i, p := range s.Images[from*Pixels : to*Pixels] {
		dst[i] = float32(p) / 255
	}
	return dst
}

// Slice returns the images [from, to) as a Set sharing storage with s.
func (s *Set) Slice(from, to int) *Set {
	return &Set{Images: s.Images[from*Pixels : to*Pixels], Labels: s.Labels[from:to]}
}

// maybeGunzip returns a reader of r's content, decompressing it when it starts with the gzip magic.
func maybeGunzip(r io.Reader) (io.Reader, error) {
	br := bufio.NewReader(r)
	magic, err := br.Peek(2)
	if err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%w: gzip: %v", ErrFormat, err)
		}
		return zr, nil
	}
	return br, nil
}

// ReadIDX decodes one idx file (unsigned-byte data, 1 or 3 dimensions; gzip-compressed or not)
// and returns its dimensions and data.
func ReadIDX(r io.Reader) (dims []int, data []byte, err error) {
	r, err = maybeGunzip(r)
	if err != nil {
		return nil, nil, err
	}
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, nil, fmt.Errorf("%w: header: %v", ErrFormat, err)
	}
	if hdr[0] != 0 || hdr[1] != 0 {
		return nil, nil, fmt.Errorf("%w: magic %x, want 0000", ErrFormat, hdr[:2])
	}
	if hdr[2] != 0x08 {
		return nil, nil, fmt.Errorf("%w: element type 0x%02x, only unsigned byte (0x08) is supported", ErrFormat, hdr[2])
	}
	nd := int(hdr[3])
	if nd != 1 && nd != 3 {
		return nil, nil, fmt.Errorf("%w: %d dimensions, want 1 (labels) or 3 (images)", ErrFormat, nd)
	}
	dims = make([]int, nd)
	total := 1
	for i := range dims {
		var d uint32
		if err := binary.Read(r, binary.BigEndian, &d); err != nil {
			return nil, nil, fmt.Errorf("%w: dimension %d: %v", ErrFormat, i, err)
		}
		if d > maxItems {
			return nil, nil, fmt.Errorf("%w: dimension %d is %d (limit %d)", ErrFormat, i, d, maxItems)
		}
		dims[i] = int(d)
		total *= int(d)
	}
	if total > maxItems*Pixels {
		return nil, nil, fmt.Errorf("%w: %v is too large", ErrFormat, dims)
	}
	// Read what is there rather than trusting the header with a large allocation up front.
	var buf bytes.Buffer
	n, err := io.Copy(&buf, io.LimitReader(r, int64(total)+1))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: data: %v", ErrFormat, err)
	}
	if n != int64(total) {
		return nil, nil, fmt.Errorf("%w: %d data bytes, header %v says %d", ErrFormat, n, dims, total)
	}
	return dims, buf.Bytes(), nil
}

// ReadSet decodes an images idx stream and a labels idx stream into a Set, checking that they agree.
func ReadSet(images, labels io.Reader) (*Set, error) {
	idims, pix, err := ReadIDX(images)
	if err != nil {
		return nil, fmt.Errorf("images: %w", err)
	}
	ldims, lab, err := ReadIDX(labels)
	if err != nil {
		return nil, fmt.Errorf("labels: %w", err)
	}
	if len(idims) != 3 || idims[1] != Rows || idims[2] != Cols {
		return nil, fmt.Errorf("%w: images have dims %v, want [N %d %d]", ErrFormat, idims, Rows, Cols)
	}
	if len(ldims) != 1 || ldims[0] != idims[0] {
		return nil, fmt.Errorf("%w: labels have dims %v for %d images", ErrFormat, ldims, idims[0])
	}
	for i, l := range lab {
		if l >= NumClasses {
			return nil, fmt.Errorf("%w: label %d of image %d is not a class", ErrFormat, l, i)
		}
	}
	return &Set{Images: pix, Labels: lab}, nil
}

// Load reads split ("train" or "t10k") from dir, which holds the four
// <split>-{images-idx3,labels-idx1}-ubyte[.gz] files.
func Load(dir, split string) (*Set, error) {
	open := func(stem string) (*os.File, error) {
		p := filepath.Join(dir, stem)
		f, err := os.Open(p + ".gz")
		if err == nil {
			return f, nil
		}
		f, err2 := os.Open(p)
		if err2 == nil {
			return f, nil
		}
		return nil, fmt.Errorf("load fashion-mnist %s: %w (install the Debian package dataset-fashion-mnist)", split, err)
	}
	fi, err := open(split + "-images-idx3-ubyte")
	if err != nil {
		return nil, err
	}
	defer fi.Close()
	fl, err := open(split + "-labels-idx1-ubyte")
	if err != nil {
		return nil, err
	}
	defer fl.Close()
	s, err := ReadSet(fi, fl)
	if err != nil {
		return nil, fmt.Errorf("load fashion-mnist %s: %w", split, err)
	}
	return s, nil
}

// writeIDX writes s as an images idx stream followed by a labels idx stream, uncompressed.
// Callers that want one compact file wrap w in a gzip.Writer (see WriteSample).
func writeIDX(w io.Writer, s *Set) error {
	hdr := func(dims ...uint32) error {
		if _, err := w.Write([]byte{0, 0, 0x08, byte(len(dims))}); err != nil {
			return err
		}
		return binary.Write(w, binary.BigEndian, dims)
	}
	n := uint32(s.Len())
	if err := hdr(n, Rows, Cols); err != nil {
		return err
	}
	if _, err := w.Write(s.Images); err != nil {
		return err
	}
	if err := hdr(n); err != nil {
		return err
	}
	_, err := w.Write(s.Labels)
	return err
}

// WriteSample writes s as one gzip stream holding the images idx followed by the labels idx —
// the format of the committed sample (models/sample-1000.idx.gz), read back by ReadSample.
func WriteSample(w io.Writer, s *Set) error {
	zw, _ := gzip.NewWriterLevel(w, gzip.BestCompression)
	zw.ModTime = zeroTime // deterministic bytes
	if err := writeIDX(zw, s); err != nil {
		return fmt.Errorf("write sample: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("write sample: %w", err)
	}
	return nil
}

// ReadSample decodes a sample written by WriteSample.
func ReadSample(b []byte) (*Set, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%w: sample gzip: %v", ErrFormat, err)
	}
	raw, err := io.ReadAll(io.LimitReader(zr, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("%w: sample gzip: %v", ErrFormat, err)
	}
	if len(raw) < 16 {
		return nil, fmt.Errorf("%w: sample of %d bytes", ErrFormat, len(raw))
	}
	n := int(binary.BigEndian.Uint32(raw[4:8]))
	split := 16 + n*Pixels
	if n > maxItems || split > len(raw) {
		return nil, fmt.Errorf("%w: sample header says %d images in %d bytes", ErrFormat, n, len(raw))
	}
	return ReadSet(bytes.NewReader(raw[:split]), bytes.NewReader(raw[split:]))
}
