package keepalive

import (
	"testing"
	"time"
)

func TestScaledLSTHConfig(t *testing.T) {
	c := ScaledLSTHConfig(5 * time.Second)
	if c.BinWidth != 5*time.Second || c.Range != 20*time.Minute || c.Fallback != 20*time.Minute || c.Long != 2*time.Hour || c.Short != 5*time.Minute || c.Gamma != 0.5 {
		t.Fatalf("ScaledLSTHConfig(5s) = %+v", c)
	}
	if _, err := NewLSTH(c); err != nil {
		t.Fatal(err)
	}
	if c := ScaledLSTHConfig(time.Minute); c != DefaultLSTHConfig() {
		t.Fatalf("ScaledLSTHConfig(1m) = %+v, want INFless's %+v", c, DefaultLSTHConfig())
	}
}
