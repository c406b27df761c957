package gateway

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sloserve/sloserve/internal/oip"
	"github.com/sloserve/sloserve/internal/oipgrpc"
)

// A nil budget only looks the model up.

// ErrBodyBudget means the request bodies held at once reached gateway.max_inflight_body_bytes
// (503 with Retry-After; gRPC UNAVAILABLE).
var ErrBodyBudget = fmt.Errorf("gateway: request bodies in flight at their byte budget: %w", oip.ErrUnavailable)

// bodyBudget bounds the request bytes the gateway holds at once, over REST and gRPC. It is safe
// for concurrent use.
type bodyBudget struct {
	limit   int64
	used    atomic.Int64
	refused atomic.Int64
}

var _ oipgrpc.BodyBudget = (*bodyBudget)(nil)

func newBodyBudget(limit int64) *bodyBudget { return &bodyBudget{limit: limit} }

// reserve takes n bytes of the budget, or reports false when they do not fit.
func (b *bodyBudget) reserve(n int64) bool {
	for {
		u := b.used.Load()
		if u+n > b.limit {
			b.refused.Add(1)
			return false
		}
		if b.used.CompareAndSwap(u, u+n) {
			return true
		}
	}
}

func (b *bodyBudget) release(n int64) { b.used.Add(-n) }

// Reserve implements oipgrpc.BodyBudget: a gRPC message of n bytes costs bodyCharge × n, as a
// REST body does (the message, its conversion and the decoded tensors).
func (b *bodyBudget) Reserve(n int64) (func(), error) {
	n *= bodyCharge
	if !b.reserve(n) {
		return nil, ErrBodyBudget
	}
	var once atomic.Bool
	return func() {
		if once.CompareAndSwap(false, true) {
			b.release(n)
		}
	}, nil
}

// Free implements oipgrpc.BodyBudget.
func (b *bodyBudget) Free() int64 { return b.limit - b.used.Load() }

// bodyCharge is what a REST body byte costs of the budget: while it serves the request the
// gateway holds the raw body it may forward as is, the decoder's copy and the decoded tensors
// (at most as large as the JSON text), so the budget bounds the bytes held rather than the
// bytes sent.
const bodyCharge = 3

// budgetStep is how far ahead of what it has read a body of unknown length reserves (bytes
// read; the reservation is bodyCharge times it).
const budgetStep = 256 << 10

// chunkSize is the size of the pieces a body of unknown length is read into.
const chunkSize = 1 << 20

// budgetReader reserves a body of unknown length (chunked) as it is read; reserved is in
// budget bytes (bodyCharge per byte read).
type budgetReader struct {
	io.ReadCloser
	b              *bodyBudget
	reserved, read int64
}

func (r *budgetReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return r.ReadCloser.Read(p)
	}
	if bodyCharge*r.read == r.reserved {
		if !r.b.reserve(bodyCharge * budgetStep) {
			return 0, ErrBodyBudget
		}
		r.reserved += bodyCharge * budgetStep
	}
	if room := r.reserved/bodyCharge - r.read; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := r.ReadCloser.Read(p)
	r.read += int64(n)
	return n, err
}

// guardBodies answers, before any body is read: 404 (or the model's error) for an inference
// request naming no served model or ensemble, and 503 when the request's Content-Length does
// not fit the body budget; a chunked body reserves the budget as it is read and fails with
// ErrBodyBudget past it. The reservation lasts until the request is answered.
func (g *Gateway) guardBodies(next http.Handler, budget *bodyBudget, limit int64, retryAfter time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		if m, v, ok := inferTarget(r.URL.Path); ok {
			if _, err := g.ModelMetadata(r.Context(), m, v); err != nil {
				writeGuardError(w, err, retryAfter)
				return
			}
		}
		switch n := r.ContentLength; {
		case budget == nil, n == 0 || n > limit: // nothing to hold, or refused unread by the handler (413)
		case n > 0:
			if !budget.reserve(bodyCharge * n) {
				writeGuardError(w, ErrBodyBudget, retryAfter)
				return
			}
			defer budget.release(bodyCharge * n)
		default:
			// A chunked body is read here, reserving as it comes, and handed on with its length
			// known, so that the handlers allocate it once at its size instead of doubling.
			br := &budgetReader{ReadCloser: r.Body, b: budget}
			defer func() { budget.release(br.reserved) }()
			chunks, n, err := readChunks(br, limit)
			if err != nil {
				writeGuardError(w, err, retryAfter)
				return
			}
			r.Body, r.ContentLength, r.TransferEncoding = &chunkReader{chunks: chunks}, n, nil
		}
		next.ServeHTTP(w, r)
	})
}

// readChunks reads r to its end in chunkSize pieces: ErrTooLarge past limit bytes, the
// budget's error past the budget, ErrBadRequest when the client's body breaks off.
func readChunks(r io.Reader, limit int64) ([][]byte, int64, error) {
	var chunks [][]byte
	var n int64
	for {
		c := make([]byte, chunkSize)
		k, err := io.ReadFull(r, c)
		n += int64(k)
		if k > 0 {
			chunks = append(chunks, c[:k:k])
		}
		if n > limit {
			return nil, n, fmt.Errorf("%w: body exceeds the limit of %d bytes", oip.ErrTooLarge, limit)
		}
		switch {
		case err == io.EOF || err == io.ErrUnexpectedEOF:
			return chunks, n, nil
		case errors.Is(err, oip.ErrUnavailable):
			return nil, n, err
		case err != nil:
			return nil, n, fmt.Errorf("%w: reading body: %v", oip.ErrBadRequest, err)
		}
	}
}

// chunkReader reads the pieces of readChunks, dropping each once read.
type chunkReader struct{ chunks [][]byte }

func (c *chunkReader) Read(p []byte) (int, error) {
	for len(c.chunks) > 0 && len(c.chunks[0]) == 0 {
		c.chunks[0] = nil
		c.chunks = c.chunks[1:]
	}
	if len(c.chunks) == 0 {
		return 0, io.EOF
	}
	k := copy(p, c.chunks[0])
	c.chunks[0] = c.chunks[0][k:]
	return k, nil
}

func (c *chunkReader) Close() error { c.chunks = nil; return nil }

// inferTarget returns the model and version of an inference path: OIP v2
// /v2/models/{m}[/versions/{v}]/infer or V1 /v1/models/{m}[/versions/{v}]:predict.
func inferTarget(path string) (model, version string, ok bool) {
	var rest string
	switch {
	case strings.HasPrefix(path, "/v2/models/") && strings.HasSuffix(path, "/infer"):
		rest = strings.TrimSuffix(strings.TrimPrefix(path, "/v2/models/"), "/infer")
	case strings.HasPrefix(path, "/v1/models/") && strings.HasSuffix(path, ":predict"):
		rest = strings.TrimSuffix(strings.TrimPrefix(path, "/v1/models/"), ":predict")
	default:
		return "", "", false
	}
	model, version, hasVersion := strings.Cut(rest, "/versions/")
	if model == "" || strings.Contains(model, "/") || (hasVersion && (version == "" || strings.Contains(version, "/"))) {
		return "", "", false // not a route: the handlers answer it
	}
	return model, version, true
}

// WriteGuardError answers err as JSON with its status (oip.StatusOf) and, for 429 and 503, a
// Retry-After of err's own or retryAfter: the answer of a request refused before any handler.
func WriteGuardError(w http.ResponseWriter, err error, retryAfter time.Duration) {
	writeGuardError(w, err, retryAfter)
}

func writeGuardError(w http.ResponseWriter, err error, retryAfter time.Duration) {
	code := oip.StatusOf(err)
	if code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable {
		after, ok := oip.RetryAfter(err)
		if !ok {
			after = retryAfter
		}
		w.Header().Set("Retry-After", strconv.FormatInt(max(1, int64(math.Ceil(after.Seconds()))), 10))
	}
	writeEnsembleJSON(w, code, oip.ErrorResponse{Error: err.Error()})
}
