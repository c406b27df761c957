package gateway

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/oip"
)

func TestFeasibleDeadline(t *testing.T) {
	known := BatchCost{Fixed: 2 * time.Millisecond, PerRowNS: 1e5} // 2 ms + 0.1 ms per row
	for _, tc := range []struct {
		name  string
		bound time.Duration
		rows  int64
		cost  BatchCost
		ok    bool
	}{
		{"1 µs, cost unknown", time.Microsecond, 1, BatchCost{}, false},
		{"at the floor, cost unknown", minRequestTimeout, 1, BatchCost{}, true},
		{"shorter than one batch", 2 * time.Millisecond, 1, known, false},
		{"one batch of 1 row", 2100 * time.Microsecond, 1, known, true},
		{"one batch of 10 rows", 2100 * time.Microsecond, 10, known, false},
		{"the SLO", time.Second, 10, known, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := feasibleDeadline(tc.bound, tc.rows, tc.cost)
			if (err == nil) != tc.ok {
				t.Fatalf("feasibleDeadline(%v, %d, %+v) = %v, want ok %v", tc.bound, tc.rows, tc.cost, err, tc.ok)
			}
			if err != nil && (!errors.Is(err, oip.ErrBadRequest) || oip.StatusOf(err) != http.StatusBadRequest) {
				t.Errorf("error %v does not map to 400", err)
			}
		})
	}
}
