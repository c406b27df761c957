package repository

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sloserve/sloserve/internal/config"
)

// ModelFile is the file each version directory holds.
const ModelFile = "model.onnx"

// ConfigFile is the optional settings file of a model directory: one models[] entry of the
// serving configuration (config.Model), without the name or with the directory's name.
const ConfigFile = "config.yaml"

// ErrNotFound means the repository holds no such model.
var ErrNotFound = errors.New("repository: no such model")

// Version is one <model>/<version> directory.
type Version struct {
	// Number is the directory's name, a positive integer.
	Number int64
	// Path is the version's model file, <dir>/<model>/<version>/model.onnx.
	Path string
	// ModTime and Size are the model file's, to notice a changed file.
	ModTime time.Time
	Size    int64
}

// Model is one model directory as scanned.
type Model struct {
	// Name is the directory's name, the model's name in OIP paths.
	Name string
	// Dir is the model's directory.
	Dir string
	// Config holds the model's settings: config.yaml over config.DefaultModel(Name).
	Config config.Model
	// Versions are the model's versions, ascending; the last is the default (Triton's
	// version_policy latest).
	Versions []Version
	// Stamp changes when a version, a model file or config.yaml changes: compare two scans'
	// stamps to decide a reload.
	Stamp string
	// Err, when not nil, says why the model cannot be served (the file and field at fault);
	// the other fields may be partial.
	Err error
}

// Latest returns the model's default version: the highest number.
func (m Model) Latest() Version {
	if len(m.Versions) == 0 {
		return Version{}
	}
	return m.Versions[len(m.Versions)-1]
}

// Version returns the version numbered s ("3"), if the model has it.
func (m Model) Version(s string) (Version, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return Version{}, false
	}
	for _, v := range m.Versions {
		if v.Number == n {
			return v, true
		}
	}
	return Version{}, false
}

// Scan reads every model directory of dir, sorted by name. Entries whose name starts with "."
// and plain files are skipped. A model whose layout is broken is returned with Err set; the
// error is for an unreadable dir only.
func Scan(dir string) ([]Model, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("scan model repository: %w", err)
	}
	var out []Model
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") || !isDir(dir, e) {
			continue
		}
		out = append(out, scanModel(dir, e.Name()))
	}
	return out, nil
}

// ScanModel reads one model directory; it returns an error wrapping ErrNotFound when dir has
// no such directory, and the model with Err set when its layout is broken.
func ScanModel(dir, name string) (Model, error) {
	if !ValidName(name) {
		return Model{}, fmt.Errorf("%w: %q is not a model name", ErrNotFound, name)
	}
	st, err := os.Stat(filepath.Join(dir, name))
	if err != nil || !st.IsDir() {
		return Model{}, fmt.Errorf("%w: %q in %s", ErrNotFound, name, dir)
	}
	return scanModel(dir, name), nil
}

// ValidName reports whether name can be a repository model's name: not empty, not starting
// with ".", and free of "/", "@" (the gateway's version separator) and white space.
func ValidName(name string) bool {
	return name != "" && !strings.HasPrefix(name, ".") && !strings.ContainsAny(name, "/\\@ \t\r\n")
}

func isDir(dir string, e fs.DirEntry) bool {
	if e.IsDir() {
		return true
	}
	if e.Type()&fs.ModeSymlink != 0 {
		st, err := os.Stat(filepath.Join(dir, e.Name()))
		return err == nil && st.IsDir()
	}
	return false
}

func scanModel(dir, name string) Model {
	m := Model{Name: name, Dir: filepath.Join(dir, name), Config: config.DefaultModel(name)}
	var stamp strings.Builder
	fail := func(err error) Model { m.Err = err; m.Stamp = stamp.String() + "!" + err.Error(); return m }
	if !ValidName(name) {
		return fail(fmt.Errorf("%s: %q is not a valid model name (no \"@\", \"/\" or white space)", m.Dir, name))
	}
	cfgPath := filepath.Join(m.Dir, ConfigFile)
	if data, err := os.ReadFile(cfgPath); err == nil {
		fmt.Fprintf(&stamp, "config:%x;", data)
		c, err := config.DecodeModel(data, name)
		if err != nil {
			return fail(fmt.Errorf("%s: %w", cfgPath, err))
		}
		m.Config = c
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fail(fmt.Errorf("%s: %w", cfgPath, err))
	}
	ents, err := os.ReadDir(m.Dir)
	if err != nil {
		return fail(fmt.Errorf("%s: %w", m.Dir, err))
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") || !isDir(m.Dir, e) {
			continue
		}
		vdir := filepath.Join(m.Dir, e.Name())
		n, err := strconv.ParseInt(e.Name(), 10, 64)
		if err != nil || n < 1 || strconv.FormatInt(n, 10) != e.Name() {
			return fail(fmt.Errorf("%s: version directory %q is not a positive integer", vdir, e.Name()))
		}
		p := filepath.Join(vdir, ModelFile)
		st, err := os.Stat(p)
		if err != nil {
			return fail(fmt.Errorf("%s: version %d has no %s: %w", p, n, ModelFile, err))
		}
		if !st.Mode().IsRegular() {
			return fail(fmt.Errorf("%s: not a regular file", p))
		}
		m.Versions = append(m.Versions, Version{Number: n, Path: p, ModTime: st.ModTime(), Size: st.Size()})
	}
	slices.SortFunc(m.Versions, func(a, b Version) int { return int(min(max(a.Number-b.Number, -1), 1)) })
	for _, v := range m.Versions {
		fmt.Fprintf(&stamp, "%d:%d:%d;", v.Number, v.ModTime.UnixNano(), v.Size)
	}
	m.Stamp = stamp.String()
	if len(m.Versions) == 0 {
		return fail(fmt.Errorf("%s: no version directory (<model>/<version>/%s)", m.Dir, ModelFile))
	}
	return m
}
