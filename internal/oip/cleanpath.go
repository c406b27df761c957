package oip

import (
	"fmt"
	"net/http"
	"path"
	"strings"
)

// CleanPaths wraps h so that a request whose path is not clean ("//", "/./", "/../") gets a JSON
// 404 {"error": ...} instead of http.ServeMux's empty 301/307 redirect. An API client that sent
// POST /v2/models//infer has a bug; redirecting it would drop the body (301) or loop, and the
// answer would not be the JSON error every other bad request gets.
func CleanPaths(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; r.Method != http.MethodConnect && !IsCleanPath(p) {
			writeJSON(w, http.StatusNotFound, ErrorResponse{
				Error: fmt.Errorf("%w: path %q is not clean (empty, \".\" or \"..\" segment)", ErrNotFound, p).Error()})
			return
		}
		h.ServeHTTP(w, r)
	})
}

// IsCleanPath reports whether p is rooted and path.Clean leaves it unchanged, allowing one
// trailing slash.
func IsCleanPath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	c := path.Clean(p)
	return c == p || (strings.HasSuffix(p, "/") && c+"/" == p)
}
