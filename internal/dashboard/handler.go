package dashboard

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

//go:embed assets/index.html assets/dashboard.js assets/dashboard.css assets/echarts.min.js
var assets embed.FS

// asset is one embedded static file, served with a strong ETag and, when the client accepts
// it, gzip-compressed (computed once, on first use).
type asset struct {
	name, contentType string
	once              sync.Once
	raw, gz           []byte
	etag              string
}

func (a *asset) load() {
	a.once.Do(func() {
		b, err := assets.ReadFile("assets/" + a.name)
		if err != nil {
			panic("dashboard: embedded asset missing: " + a.name) // a build error, not input
		}
		a.raw = b
		sum := sha256.Sum256(b)
		a.etag = `"` + hex.EncodeToString(sum[:8]) + `"`
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = zw.Write(b)
		_ = zw.Close()
		a.gz = buf.Bytes()
	})
}

// staticAssets are the files served below Options.Path, by name.
var staticAssets = map[string]*asset{
	"echarts.min.js": {name: "echarts.min.js", contentType: "text/javascript; charset=utf-8"},
	"dashboard.js":   {name: "dashboard.js", contentType: "text/javascript; charset=utf-8"},
	"dashboard.css":  {name: "dashboard.css", contentType: "text/css; charset=utf-8"},
}

// pageTemplate is index.html; it only receives the options below, so it holds no data.
var pageTemplate = template.Must(template.ParseFS(assets, "assets/index.html"))

// renderPage renders index.html once for opts.
func renderPage(opts Options) ([]byte, error) {
	var b bytes.Buffer
	err := pageTemplate.Execute(&b, struct {
		Title, Path string
		RefreshMS   int64
		AuthNeeded  bool
	}{opts.Title, opts.Path, opts.Refresh.Milliseconds(), opts.Token != ""})
	if err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// contentSecurityPolicy allows only this origin's scripts and data; ECharts' SVG renderer sets
// style attributes, hence 'unsafe-inline' for styles only.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// ServeHTTP serves the page at Options.Path (and Path+"/"), its data at Path+"/data" and its
// static files below Path. Only GET and HEAD are allowed. When Options.Token is set the data
// endpoint requires it as a bearer token.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, d.opts.Path)
	if !ok || (rest != "" && !strings.HasPrefix(rest, "/")) {
		writeError(w, http.StatusNotFound, "not found: "+r.URL.Path)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "method not allowed: "+r.Method)
		return
	}
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	switch rest = strings.TrimPrefix(rest, "/"); rest {
	case "":
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("Cache-Control", "no-cache")
		h.Set("Content-Length", strconv.Itoa(len(d.page)))
		if r.Method != http.MethodHead {
			_, _ = w.Write(d.page)
		}
	case "data":
		d.serveData(w, r)
	default:
		a, ok := staticAssets[rest]
		if !ok {
			writeError(w, http.StatusNotFound, "not found: "+r.URL.Path)
			return
		}
		serveAsset(w, r, a)
	}
}

// serveData writes the ring as Data.
func (d *Dashboard) serveData(w http.ResponseWriter, r *http.Request) {
	if !d.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="sloserve dashboard"`)
		writeError(w, http.StatusUnauthorized, "missing or wrong bearer token")
		return
	}
	snaps, errs, lastErr := d.snapshots()
	body, err := json.Marshal(buildData(d.opts, snaps, errs, lastErr))
	if err != nil { // only Num values are floats, and they encode NaN as null
		writeError(w, http.StatusInternalServerError, "encode data: "+err.Error())
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// authorized reports whether r carries the configured bearer token (always true without one).
func (d *Dashboard) authorized(r *http.Request) bool {
	if d.opts.Token == "" {
		return true
	}
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(d.opts.Token)) == 1
}

// serveAsset writes a static file, honouring If-None-Match and Accept-Encoding: gzip.
func serveAsset(w http.ResponseWriter, r *http.Request, a *asset) {
	a.load()
	h := w.Header()
	h.Set("Content-Type", a.contentType)
	h.Set("Cache-Control", "no-cache") // revalidated by ETag: cheap, and never stale after an upgrade
	h.Set("Vary", "Accept-Encoding")
	body, etag := a.raw, a.etag
	if acceptsGzip(r) {
		h.Set("Content-Encoding", "gzip")
		body, etag = a.gz, strings.TrimSuffix(a.etag, `"`)+`-gz"`
	}
	h.Set("ETag", etag)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
}

// acceptsGzip reports whether r's Accept-Encoding lists gzip without q=0.
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(name), "gzip") {
			q := strings.ReplaceAll(params, " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}

// writeError writes {"error": msg} with code.
func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
