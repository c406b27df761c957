package sim

import (
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/autoscale"
)

// TestPushHistoryWindow checks that the amortised window holds exactly the last HistoryLen
// samples, oldest first, across several wrap-arounds of its backing array.
func TestPushHistoryWindow(t *testing.T) {
	for _, hl := range []int{1, 2, 7, 900} {
		e := &engine{cfg: Config{HistoryLen: hl}}
		for i := range 5*hl + 3 {
			e.pushHistory(autoscale.Sample{Arrivals: i, Period: time.Second})
			want := min(i+1, hl)
			if len(e.history) != want {
				t.Fatalf("HistoryLen %d, after %d pushes: len %d, want %d", hl, i+1, len(e.history), want)
			}
			for k, s := range e.history {
				if w := i + 1 - want + k; s.Arrivals != w {
					t.Fatalf("HistoryLen %d, after %d pushes: history[%d] = %d, want %d", hl, i+1, k, s.Arrivals, w)
				}
			}
		}
	}
}
