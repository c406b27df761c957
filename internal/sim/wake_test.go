package sim

import "testing"

// TestWakeSet: a wake-up asked for at a pending time is not pushed again; once popped it is
// pushed anew; past the recorded times every wake-up is pushed (unrecorded, as before).
func TestWakeSet(t *testing.T) {
	var s wakeSet
	steps := []struct {
		op   string
		at   int64
		push bool
	}{
		{"add", 10, true}, {"add", 10, false}, {"add", 5, true}, {"add", 10, false},
		{"del", 10, false}, {"add", 10, true}, {"add", 7, true}, {"add", 8, true},
		{"add", 9, true}, {"add", 9, true}, // four recorded (5, 10, 7, 8): 9 goes unrecorded
		{"del", 5, false}, {"add", 9, true}, {"add", 9, false}, {"del", 42, false}, {"add", 7, false},
	}
	for i, st := range steps {
		switch st.op {
		case "add":
			if got := s.add(st.at); got != st.push {
				t.Fatalf("step %d: add(%d) = %v, want %v (set %v)", i, st.at, got, st.push, s.at[:s.n])
			}
		case "del":
			s.del(st.at)
		}
	}
}
