package load

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// A closed loop over two replicas, one of which is gone (its listener closed), fails every
// request over to the other: all answered 200, none lost, each client moved once.
func TestClosedFailsOverRefusedReplica(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Idempotency-Key") == "" {
			http.Error(w, "no idempotency key", http.StatusBadRequest)
			return
		}
		w.Write([]byte(`{}`))
	}))
	defer ok.Close()
	gone := httptest.NewServer(http.NotFoundHandler())
	goneURL := gone.URL
	gone.Close()
	r, err := Closed(context.Background(), ClosedConfig{URLs: []string{goneURL, ok.URL}, Payloads: []Payload{{Body: []byte(`{}`)}},
		Concurrency: 4, Duration: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests == 0 || r.Errors != 0 || r.Lost != 0 || r.Codes[http.StatusOK] != r.Requests {
		t.Errorf("requests %d, errors %d, lost %d, codes %v: want every request answered 200", r.Requests, r.Errors, r.Lost, r.Codes)
	}
	if r.Failovers != 2 { // clients 0 and 2 start on the gone replica and move once
		t.Errorf("failovers %d, want 2", r.Failovers)
	}
}
