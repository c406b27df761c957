package measure

import (
	"fmt"

	"github.com/sloserve/sloserve/internal/models/fashion"
	"github.com/sloserve/sloserve/internal/models/train"
)

// The labelled data sets `sloserve ensemble eval --data` accepts.
const (
	// DataSample is the committed 1,000-image stratified sample (100 per class), embedded in the
	// binary: quick, but ±1 percentage point of sampling noise at n = 1,000.
	DataSample = "sample"
	// DataFull is the full 10,000-image Fashion-MNIST test set, read from the data directory
	// (Debian dataset-fashion-mnist, fashion.DefaultDir): ±0.3 points.
	DataFull = "full"
)

// The validation data that goes with each data set (LoadValidation): held-out training images
// that no bundled model was trained on.
const (
	// ValidationSample is the committed 2,000-image validation sample (200 per class).
	ValidationSample = "validation sample"
	// ValidationFull is the whole held-out split: the last train.ValidationSplit images of the
	// training file.
	ValidationFull = "validation split"
)

// DataSets lists the accepted data set names.
var DataSets = []string{DataSample, DataFull}

// FromSet turns a Fashion-MNIST set into a Sample of pixel/255 rows (the bundled models' input).
func FromSet(set *fashion.Set) Sample {
	s := Sample{X: set.Floats(nil, 0, set.Len()), Dim: fashion.Pixels, Labels: make([]int, set.Len())}
	for i, l := range set.Labels {
		s.Labels[i] = int(l)
	}
	return s
}

// Load returns the named data set: DataSample from sample (the bundled sample's loader), DataFull
// from the t10k files in dir.
func Load(data, dir string, sample func() (*fashion.Set, error)) (Sample, error) {
	return loadSet("data", data, sample, func() (*fashion.Set, error) { return fashion.Load(dir, "t10k") })
}

// LoadValidation returns the validation data that goes with the named data set: for DataSample
// the committed validation sample (from sample, the bundle's loader), for DataFull the held-out
// last train.ValidationSplit images of the training file in dir.
func LoadValidation(data, dir string, sample func() (*fashion.Set, error)) (Sample, error) {
	return loadSet("validation data", data, sample, func() (*fashion.Set, error) {
		set, err := fashion.Load(dir, "train")
		if err != nil {
			return nil, err
		}
		if set.Len() <= train.ValidationSplit {
			return nil, fmt.Errorf("%d training images, want more than %d", set.Len(), train.ValidationSplit)
		}
		return set.Slice(set.Len()-train.ValidationSplit, set.Len()), nil
	})
}

// loadSet loads data (DataSample from sample, DataFull from full); what names it in errors.
func loadSet(what, data string, sample, full func() (*fashion.Set, error)) (Sample, error) {
	var load func() (*fashion.Set, error)
	switch data {
	case DataSample:
		load = sample
	case DataFull:
		load = full
	default:
		return Sample{}, fmt.Errorf("%s %q: want one of %v", what, data, DataSets)
	}
	set, err := load()
	if err != nil {
		return Sample{}, fmt.Errorf("%s %s: %w", what, data, err)
	}
	return FromSet(set), nil
}
