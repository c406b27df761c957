package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sloserve/sloserve/internal/oip"
)

// A request that the gateway sends as a batch of its own is forwarded with its original JSON
// body, so that the gateway does not re-encode (in Go, the costliest step of its path) what it
// has just decoded and validated. The shared oip handler hands Core.Infer only the decoded
// request, so a middleware keeps a copy of the body in the request's context.

type rawBodyKey struct{}

// keepRawBody reads the body of JSON inference requests of at most limit bytes into memory,
// stores it in the request context and lets the wrapped handler read it from memory.
func keepRawBody(next http.Handler, limit int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/infer") ||
			r.Header.Get("Inference-Header-Content-Length") != "" || r.ContentLength > limit {
			next.ServeHTTP(w, r)
			return
		}
		size := r.ContentLength
		if size < 0 {
			size = 4096
		}
		var buf bytes.Buffer
		buf.Grow(int(size) + 1)
		n, err := buf.ReadFrom(io.LimitReader(r.Body, limit+1))
		r.Body.Close()
		rest := io.Reader(bytes.NewReader(buf.Bytes()))
		if err != nil {
			rest = io.MultiReader(rest, errReader{err})
		}
		r.Body = io.NopCloser(rest)
		if err == nil && n <= limit {
			r = r.WithContext(context.WithValue(r.Context(), rawBodyKey{}, buf.Bytes()))
		}
		next.ServeHTTP(w, r)
	})
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func rawBody(ctx context.Context) []byte {
	b, _ := ctx.Value(rawBodyKey{}).([]byte)
	return b
}

// RawBackend is implemented by backends that can send one request's original body verbatim.
type RawBackend interface {
	// InferRaw posts body (an OIP v2 JSON inference request) to the instance at addr.
	InferRaw(ctx context.Context, addr, model string, body []byte) (*oip.InferenceResponse, error)
}

var _ RawBackend = (*OIPBackend)(nil)

// InferRaw implements RawBackend.
func (b *OIPBackend) InferRaw(ctx context.Context, addr, model string, body []byte) (*oip.InferenceResponse, error) {
	c, err := b.client(addr) // for the shared transport and limits
	if err != nil {
		return nil, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.BaseURL()+"/v2/models/"+model+"/infer", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hr.Header["Content-Type"] = jsonType
	hr.Header["Idempotency-Key"] = nil // replayable on a stale keep-alive connection
	res, err := b.opts.HTTPClient.Do(hr)
	if err != nil {
		return nil, fmt.Errorf("infer %s: %w", model, err)
	}
	defer res.Body.Close()
	lim := b.limits()
	n := res.ContentLength
	if n < 0 || n > lim.MaxBodyBytes {
		n = 512
	}
	var buf bytes.Buffer
	buf.Grow(int(n) + 1)
	if _, err := buf.ReadFrom(io.LimitReader(res.Body, lim.MaxBodyBytes+1)); err != nil {
		return nil, fmt.Errorf("infer %s: read answer: %w", model, err)
	}
	if res.StatusCode != http.StatusOK {
		return nil, statusError(res, buf.Bytes())
	}
	if int64(buf.Len()) > lim.MaxBodyBytes {
		return nil, fmt.Errorf("infer %s: %w: answer larger than %d bytes", model, oip.ErrTooLarge, lim.MaxBodyBytes)
	}
	out, err := oip.DecodeResponse(buf.Bytes(), lim)
	if err != nil {
		return nil, fmt.Errorf("infer %s: answer: %w", model, err)
	}
	if us, err := strconv.ParseInt(res.Header.Get(oip.HeaderServiceTime), 10, 64); err == nil && us >= 0 {
		out.ServiceTime = time.Duration(us) * time.Microsecond
	}
	return out, nil
}

var jsonType = []string{"application/json"}

func (b *OIPBackend) limits() oip.Limits {
	if b.opts.Limits == (oip.Limits{}) {
		return oip.DefaultLimits()
	}
	return b.opts.Limits
}

// statusError turns a non-200 answer into an *oip.StatusError, as oip.Client does.
func statusError(res *http.Response, body []byte) error {
	msg := strings.TrimSpace(string(body))
	var er struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &er) == nil && er.Error != "" {
		msg = er.Error
	}
	if msg == "" {
		msg = http.StatusText(res.StatusCode)
	}
	se := &oip.StatusError{Code: res.StatusCode, Message: msg}
	if s, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil && s >= 0 {
		se.RetryAfter = time.Duration(s) * time.Second
	}
	return se
}
