package batcher

import (
	"testing"
	"time"
)

func TestAttemptTimeout(t *testing.T) {
	now := time.Unix(1000, 0)
	slo := 200 * time.Millisecond
	for _, c := range []struct {
		name      string
		canRetry  bool
		batchTime time.Duration
		backend   time.Duration
		latest    time.Time
		want      time.Duration
	}{
		{"first attempt: slo/4 floor", true, 2 * time.Millisecond, 30 * time.Second, now.Add(slo), 50 * time.Millisecond},
		{"first attempt: 4 batch times", true, 40 * time.Millisecond, 30 * time.Second, now.Add(slo), 160 * time.Millisecond},
		{"first attempt, no estimate: last attempt's bound", true, 0, 30 * time.Second, now.Add(slo), 400 * time.Millisecond},
		{"last attempt: deadline + slo", false, 2 * time.Millisecond, 30 * time.Second, now.Add(100 * time.Millisecond), 300 * time.Millisecond},
		{"last attempt: backend timeout caps", false, 0, 250 * time.Millisecond, now.Add(slo), 250 * time.Millisecond},
		{"deadline long past: one slo", false, 0, 30 * time.Second, now.Add(-time.Hour), slo},
		{"first attempt capped by the last bound", true, time.Second, 30 * time.Second, now, slo},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := attemptTimeout(c.canRetry, c.batchTime, slo, c.backend, c.latest, now); got != c.want {
				t.Errorf("attemptTimeout (-want +got): -%v +%v", c.want, got)
			}
		})
	}
}

func TestBusyBackoff(t *testing.T) {
	for _, c := range []struct {
		name   string
		expect time.Duration
		streak int
		want   time.Duration
	}{
		{"no estimate: the floor", 0, 1, minBusyBackoff},
		{"half the batch time", 10 * time.Millisecond, 1, 5 * time.Millisecond},
		{"doubled per busy answer in a row", 10 * time.Millisecond, 2, 10 * time.Millisecond},
		{"at most twice the batch time", 10 * time.Millisecond, 10, 20 * time.Millisecond},
		{"a fast model's floor", 100 * time.Microsecond, 10, minBusyBackoff},
		{"a slow model's batch is capped too", time.Second, 1, maxBusyBackoff},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := busyBackoff(c.expect, c.streak); got != c.want {
				t.Errorf("busyBackoff(%v, %d) (-want +got): -%v +%v", c.expect, c.streak, c.want, got)
			}
		})
	}
}
