package oip

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Client talks OIP v2 REST to one server (a worker, Triton, KServe, MLServer or a gateway). It is
// safe for concurrent use; connections are kept alive and reused.
type Client struct {
	base   string
	hc     *http.Client
	limits Limits
	binary bool
}

// ClientOptions configures NewClient. The zero value is usable.
type ClientOptions struct {
	// HTTPClient sends the requests; nil means a client over NewTransport with no overall
	// timeout (bound each call with its context).
	HTTPClient *http.Client
	// Limits bounds response bodies and tensors; zero means DefaultLimits.
	Limits Limits
	// BinaryData sends tensors with Triton's binary tensor data extension and asks for binary
	// outputs (binary_data_output), instead of JSON numbers. sloserve workers and Triton support
	// it; leave it off for servers that do not.
	BinaryData bool
}

// NewTransport returns an http.Transport tuned for many small requests to few backends:
// keep-alive with up to 256 idle connections per host, no compression, short dial timeout.
func NewTransport() *http.Transport {
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    true,
		ResponseHeaderTimeout: 0,
		ExpectContinueTimeout: 0,
	}
}

// NewClient returns a client for the server at baseURL (e.g. "http://127.0.0.1:8001").
func NewClient(baseURL string, opts ClientOptions) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("oip: client base URL %q: want http(s)://host:port", baseURL)
	}
	lim := opts.Limits.WithDefaults()
	if err := lim.Validate(); err != nil {
		return nil, fmt.Errorf("oip: client: %w", err)
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: NewTransport()}
	}
	return &Client{base: strings.TrimRight(baseURL, "/"), hc: hc, limits: lim, binary: opts.BinaryData}, nil
}

// BaseURL returns the server address the client was created with.
func (c *Client) BaseURL() string { return c.base }

func modelPath(model, version string) string {
	p := "/v2/models/" + url.PathEscape(model)
	if version != "" {
		p += "/versions/" + url.PathEscape(version)
	}
	return p
}

// Infer sends req to model (version "" = default) and decodes the answer. A non-200 answer is a
// *StatusError that unwraps to the matching sentinel (ErrOverloaded, ErrModelNotFound, ...). The
// response's ServiceTime is read from HeaderServiceTime when the server sends it. The request is
// marked idempotent, so the transport may resend it once on a connection that went stale.
func (c *Client) Infer(ctx context.Context, model, version string, req *InferenceRequest) (*InferenceResponse, error) {
	hr, err := c.inferRequest(ctx, model, version, req)
	if err != nil {
		return nil, err
	}
	hr.Header["Idempotency-Key"] = nil // replayable, not sent (net/http Transport docs)
	res, err := c.hc.Do(hr)
	if err != nil {
		return nil, fmt.Errorf("oip: infer %s: %w", model, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, statusError(res)
	}
	buf := getBuf()
	defer putBuf(buf)
	if err := readResponse(res, buf, c.limits.MaxBodyBytes); err != nil {
		return nil, fmt.Errorf("oip: infer %s: %w", model, err)
	}
	var out *InferenceResponse
	if hl := res.Header.Get(HeaderInferenceHeaderLength); hl != "" {
		n, perr := strconv.Atoi(hl)
		if perr != nil {
			return nil, fmt.Errorf("oip: infer %s: response header %s %q is not a length", model, HeaderInferenceHeaderLength, hl)
		}
		out, err = DecodeResponseBinary(*buf, n, c.limits)
	} else {
		out, err = DecodeResponse(*buf, c.limits)
	}
	if err != nil {
		return nil, fmt.Errorf("oip: infer %s: response: %w", model, err)
	}
	if v := res.Header.Get(HeaderServiceTime); v != "" {
		if us, err := strconv.ParseInt(v, 10, 64); err == nil && us >= 0 {
			out.ServiceTime = time.Duration(us) * time.Microsecond
		}
	}
	return out, nil
}

// estimateSize guesses the encoded size of req, so that encoding rarely grows the buffer.
// inferRequest builds the HTTP request of Infer: JSON, or with BinaryData the binary extension's
// layout streamed from its parts (the tensors' own memory where the host's layout is the wire's).
func (c *Client) inferRequest(ctx context.Context, model, version string, req *InferenceRequest) (*http.Request, error) {
	u := c.base + modelPath(model, version) + "/infer"
	if !c.binary {
		body, err := AppendRequest(make([]byte, 0, estimateSize(req)), req)
		if err != nil {
			return nil, fmt.Errorf("oip: encode request: %w", err)
		}
		hr, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("oip: infer %s: %w", model, err)
		}
		hr.Header.Set("Content-Type", "application/json")
		return hr, nil
	}
	bin := *req
	bin.Parameters = make(Parameters, len(req.Parameters)+1)
	for k, v := range req.Parameters {
		bin.Parameters[k] = v
	}
	bin.Parameters[ParamBinaryDataOutput] = true
	parts, size, err := requestBinaryParts(&bin, 256+128*len(req.Inputs))
	if err != nil {
		return nil, fmt.Errorf("oip: encode request: %w", err)
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if err != nil {
		return nil, fmt.Errorf("oip: infer %s: %w", model, err)
	}
	hr.GetBody = func() (io.ReadCloser, error) {
		b := net.Buffers(slices.Clone(parts))
		return io.NopCloser(&b), nil
	}
	hr.Body, _ = hr.GetBody()
	hr.ContentLength = size
	hr.Header.Set("Content-Type", "application/octet-stream")
	hr.Header.Set(HeaderInferenceHeaderLength, strconv.Itoa(len(parts[0])))
	return hr, nil
}

func estimateSize(req *InferenceRequest) int {
	n := 256
	for i := range req.Inputs {
		n += 128 + 12*req.Inputs[i].Len()
	}
	return n
}

func readResponse(res *http.Response, buf *[]byte, limit int64) error {
	if res.ContentLength > limit {
		return fmt.Errorf("%w: response is %d bytes, limit %d", ErrTooLarge, res.ContentLength, limit)
	}
	b := *buf
	if res.ContentLength > 0 && int64(cap(b)) < res.ContentLength+1 {
		b = make([]byte, 0, res.ContentLength+1)
	}
	r := io.LimitReader(res.Body, limit+1)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			*buf = b
			return fmt.Errorf("reading response: %w", err)
		}
	}
	*buf = b
	if int64(len(b)) > limit {
		return fmt.Errorf("%w: response exceeds %d bytes", ErrTooLarge, limit)
	}
	return nil
}

// statusError builds the *StatusError for a non-200 answer.
func statusError(res *http.Response) error {
	raw, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	msg := strings.TrimSpace(string(raw))
	var er ErrorResponse
	if json.Unmarshal(raw, &er) == nil && er.Error != "" {
		msg = er.Error
	}
	if msg == "" {
		msg = http.StatusText(res.StatusCode)
	}
	return &StatusError{Code: res.StatusCode, Message: msg, RetryAfter: parseRetryAfter(res.Header.Get("Retry-After"))}
}

// parseRetryAfter reads a Retry-After value in seconds or as an HTTP date; 0 when absent.
func parseRetryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// get issues a GET (or a POST with a JSON body) and decodes a 200 answer into out (if non-nil).
func (c *Client) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("oip: %s %s: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	hr, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return fmt.Errorf("oip: %s %s: %w", method, path, err)
	}
	if in != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	res, err := c.hc.Do(hr)
	if err != nil {
		return fmt.Errorf("oip: %s %s: %w", method, path, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return statusError(res)
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
		return nil
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, c.limits.MaxBodyBytes)).Decode(out); err != nil {
		return fmt.Errorf("oip: %s %s: decoding answer: %w", method, path, err)
	}
	return nil
}

// Live returns nil when the server answers GET /v2/health/live with 200.
func (c *Client) Live(ctx context.Context) error {
	return c.call(ctx, http.MethodGet, "/v2/health/live", nil, nil)
}

// Ready returns nil when the server is ready (GET /v2/health/ready answers 200); otherwise the
// error unwraps to ErrUnavailable or the transport error.
func (c *Client) Ready(ctx context.Context) error {
	return notReady(c.call(ctx, http.MethodGet, "/v2/health/ready", nil, nil))
}

// ModelReady returns nil when model (version "" = default) is ready; otherwise the error
// unwraps to ErrUnavailable, ErrModelNotFound or the transport error.
func (c *Client) ModelReady(ctx context.Context, model, version string) error {
	return notReady(c.call(ctx, http.MethodGet, modelPath(model, version)+"/ready", nil, nil))
}

// notReady maps the 400 a ready endpoint answers when not ready (Triton's answer) to
// ErrUnavailable.
func notReady(err error) error {
	if errors.Is(err, ErrBadRequest) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

// ServerMetadata fetches GET /v2.
func (c *Client) ServerMetadata(ctx context.Context) (ServerMetadata, error) {
	var md ServerMetadata
	err := c.call(ctx, http.MethodGet, "/v2", nil, &md)
	return md, err
}

// Metadata fetches the metadata of model (version "" = default).
func (c *Client) Metadata(ctx context.Context, model, version string) (*ModelMetadata, error) {
	md := new(ModelMetadata)
	if err := c.call(ctx, http.MethodGet, modelPath(model, version), nil, md); err != nil {
		return nil, err
	}
	return md, nil
}

// Models lists the server's repository; readyOnly asks for ready models only.
func (c *Client) Models(ctx context.Context, readyOnly bool) ([]RepositoryIndexEntry, error) {
	var list []RepositoryIndexEntry
	err := c.call(ctx, http.MethodPost, "/v2/repository/index", RepositoryIndexRequest{Ready: readyOnly}, &list)
	return list, err
}

// IsRetryable reports whether err is worth retrying on another instance or later: overload,
// unavailability and transport failures are; bad requests, unknown models and deadlines are not.
func IsRetryable(err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, ErrOverloaded), errors.Is(err, ErrUnavailable):
		return true
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	}
	var se *StatusError
	if errors.As(err, &se) {
		return se.Code >= 500 && se.Code != http.StatusGatewayTimeout && se.Code != http.StatusNotImplemented
	}
	var ne net.Error
	var oe *net.OpError
	return errors.As(err, &ne) || errors.As(err, &oe)
}
