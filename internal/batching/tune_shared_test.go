package batching

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/profile"
)

// TestTuneFixedINFlessProfile applies MArk's rule to INFless's measured resnet-50 profile
// (/work/shared/data/profiles/infless), skipping when the shared data is absent.
func TestTuneFixedINFlessProfile(t *testing.T) {
	path := filepath.Join("..", "..", "..", "shared", "data", "profiles", "infless", "resnet-50-profile-results.txt")
	f, err := os.Open(path)
	if err != nil {
		t.Skipf("shared profile not available (%v): run from the sloserve workspace with ../shared/data", err)
	}
	defer f.Close()
	p, err := profile.ReadINFless(f)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		cpu, gpu int
		wantN    int
		wantW    time.Duration
		wantRate float64
	}{
		// T_1 = 60, T_2 = 72, T_4 = 112.5 ms, T_8 = 22.6 s: b = 4 allows min(200, 4·60) − 112.5.
		{"2 threads + 10% GPU", 2, 10, 4, 87500 * time.Microsecond, 4 / 0.1125},
		// T_1 = 152, T_2 = 230 ms: batching cannot meet 200 ms.
		{"2 threads CPU", 2, 0, 1, 0, 1 / 0.152},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := p.Curve(tt.cpu, tt.gpu)
			if err != nil {
				t.Fatal(err)
			}
			n, w, rate := TuneFixed(c, DefaultSLO, 0)
			if n != tt.wantN || w != tt.wantW || math.Abs(rate-tt.wantRate) > 1e-9*tt.wantRate {
				t.Errorf("TuneFixed (-want +got):\n-n=%d w=%v rate=%.4f\n+n=%d w=%v rate=%.4f", tt.wantN, tt.wantW, tt.wantRate, n, w, rate)
			}
		})
	}
}
