package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

var (
	linkRE  = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	fenceRE = regexp.MustCompile("(?s)```.*?```")
)

// slug is GitHub's anchor of a heading: lower case, letters, digits, spaces, '-' and '_' kept,
// spaces turned into '-'.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

func anchorsOf(t *testing.T, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	a := map[string]bool{}
	for _, line := range strings.Split(fenceRE.ReplaceAllString(string(b), ""), "\n") {
		if h := strings.TrimLeft(line, "#"); h != line && strings.HasPrefix(h, " ") {
			a[slug(h)] = true
		}
	}
	return a
}

// TestDocLinks checks that every relative link of README.md and docs/ names an existing file and,
// for a Markdown target, an existing heading.
func TestDocLinks(t *testing.T) {
	root := repoRoot(t)
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob(filepath.Join(root, "docs", "decide", "*.md"))
	pages = append(append(pages, more...), filepath.Join(root, "README.md"))
	for _, page := range pages {
		rel, _ := filepath.Rel(root, page)
		t.Run(rel, func(t *testing.T) {
			b, err := os.ReadFile(page)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range linkRE.FindAllStringSubmatch(fenceRE.ReplaceAllString(string(b), ""), -1) {
				link := m[1]
				if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
					continue
				}
				path, anchor, _ := strings.Cut(link, "#")
				target := page
				if path != "" {
					target = filepath.Join(filepath.Dir(page), filepath.FromSlash(path))
				}
				if _, err := os.Stat(target); err != nil {
					t.Errorf("link %s: %v", link, err)
					continue
				}
				if anchor != "" && strings.HasSuffix(target, ".md") && !anchorsOf(t, target)[anchor] {
					t.Errorf("link %s: no heading with anchor #%s in %s", link, anchor, path)
				}
			}
		})
	}
}

func TestSlug(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Simulator configuration (`sloserve sim --config`)", "simulator-configuration-sloserve-sim---config"},
		{"Combined operator profiling (§3.3)", "combined-operator-profiling-33"},
		{"MArk Table 2 / BATCH Fig. 14 in shape", "mark-table-2--batch-fig-14-in-shape"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			if got := slug(tc.in); got != tc.want {
				t.Errorf("slug (-want +got):\n-%s\n+%s", tc.want, got)
			}
		})
	}
}
