package ensemble

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ClassTable holds per-model, per-class correctness rates — e.g. Cocktail's ImageNet table of
// how many of each class's 50 validation images each model classifies correctly
// (cocktail-imagenet-class-correct.csv).
type ClassTable struct {
	// Models lists the models in first-appearance order.
	Models []string
	// Classes lists the class identifiers in first-appearance order.
	Classes []string
	// Rate[m][c] is model m's fraction of correct answers on class c, in [0, 1].
	Rate [][]float64
}

// Accuracy returns model m's mean accuracy over all classes (classes weighted equally).
func (t *ClassTable) Accuracy(m int) float64 {
	s := 0.0
	for _, r := range t.Rate[m] {
		s += r
	}
	return s / float64(len(t.Rate[m]))
}

// ModelIndex returns the index of the named model, or -1.
func (t *ClassTable) ModelIndex(name string) int {
	for i, m := range t.Models {
		if m == name {
			return i
		}
	}
	return -1
}

// ReadClassTable decodes CSV rows "model,class,correct" (an optional header row starting with
// "model" is skipped), where correct counts the class's images the model got right out of
// perClass. Every model must have exactly one row per class.
func ReadClassTable(r io.Reader, perClass int) (*ClassTable, error) {
	if perClass <= 0 {
		return nil, fmt.Errorf("read class table: perClass must be > 0, got %d", perClass)
	}
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = 3
	cr.ReuseRecord = true
	t := &ClassTable{}
	mi, ci := map[string]int{}, map[string]int{}
	type cell struct{ m, c int }
	seen := map[cell]bool{}
	var rows [][3]int // model, class, correct
	for line := 1; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read class table: %w", err)
		}
		if line == 1 && strings.EqualFold(strings.TrimSpace(rec[0]), "model") {
			continue
		}
		m, c := strings.TrimSpace(rec[0]), strings.TrimSpace(rec[1])
		if m == "" || c == "" {
			return nil, fmt.Errorf("read class table: line %d: empty model or class", line)
		}
		n, err := strconv.Atoi(strings.TrimSpace(rec[2]))
		if err != nil || n < 0 || n > perClass {
			return nil, fmt.Errorf("read class table: line %d: correct must be an integer in [0, %d], got %q", line, perClass, rec[2])
		}
		if _, ok := mi[m]; !ok {
			mi[m] = len(t.Models)
			t.Models = append(t.Models, m)
		}
		if _, ok := ci[c]; !ok {
			ci[c] = len(t.Classes)
			t.Classes = append(t.Classes, c)
		}
		k := cell{mi[m], ci[c]}
		if seen[k] {
			return nil, fmt.Errorf("read class table: line %d: duplicate row for model %q class %q", line, m, c)
		}
		seen[k] = true
		rows = append(rows, [3]int{k.m, k.c, n})
	}
	if len(t.Models) == 0 {
		return nil, errors.New("read class table: no rows")
	}
	if len(rows) != len(t.Models)*len(t.Classes) {
		return nil, fmt.Errorf("read class table: %d rows for %d models x %d classes: every model needs every class",
			len(rows), len(t.Models), len(t.Classes))
	}
	t.Rate = make([][]float64, len(t.Models))
	for i := range t.Rate {
		t.Rate[i] = make([]float64, len(t.Classes))
	}
	for _, r := range rows {
		t.Rate[r[0]][r[1]] = float64(r[2]) / float64(perClass)
	}
	return t, nil
}
