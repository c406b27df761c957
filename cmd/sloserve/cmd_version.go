package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"runtime/debug"
	"sort"
	"strings"
)

// version and commit are set for releases with
// -ldflags "-X main.version=v1.2.3 -X main.commit=abc1234" (the Makefile's build target does it);
// when empty, the module version and VCS stamp of the build info are used.
var (
	version string
	commit  string
)

// buildVersion is what 'sloserve version' prints.
type buildVersion struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	CommitAt  string `json:"commit_time,omitempty"`
	Modified  bool   `json:"modified"`
	GoVersion string `json:"go_version"`
}

// readBuildVersion merges the ldflags overrides with runtime/debug.ReadBuildInfo.
func readBuildVersion() buildVersion {
	v := buildVersion{Version: "(devel)", Commit: "unknown"}
	if bi, ok := debug.ReadBuildInfo(); ok {
		v.GoVersion = bi.GoVersion
		if bi.Main.Version != "" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Commit = s.Value
			case "vcs.time":
				v.CommitAt = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	if version != "" {
		v.Version = version
	}
	if commit != "" {
		v.Commit = commit
	}
	return v
}

// runVersion is 'sloserve version' (and 'sloserve --version').
func runVersion(_ context.Context, args []string, e env) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the build information as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	v := readBuildVersion()
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	extra := []string{"commit " + v.Commit}
	if v.CommitAt != "" {
		extra = append(extra, v.CommitAt)
	}
	if v.Modified {
		extra = append(extra, "modified")
	}
	if v.GoVersion != "" {
		extra = append(extra, v.GoVersion)
	}
	_, err := fmt.Fprintf(e.stdout, "sloserve %s (%s)\n", v.Version, strings.Join(extra, ", "))
	return err
}

// runCompletion is 'sloserve completion bash': a bash script completing commands and sub-verbs
// from the command table, and flags by asking 'sloserve CMD [VERB] -h' at completion time (so it
// never goes stale).
func runCompletion(_ context.Context, args []string, e env) error {
	if len(args) == 0 || isHelp(args) {
		return showHelp("completion")
	}
	if args[0] != "bash" {
		return usagef("completion: unknown shell %q (want: bash)", args[0])
	}
	fs := flag.NewFlagSet("completion bash", flag.ContinueOnError)
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	var cases strings.Builder
	for _, n := range names {
		if vs := commands[n].verbs; len(vs) > 0 {
			fmt.Fprintf(&cases, "    %s) verbs=%q ;;\n", n, strings.Join(vs, " "))
		}
	}
	_, err := fmt.Fprintf(e.stdout, bashCompletion, strings.Join(names, " "), cases.String())
	return err
}

// bashCompletion is the script printed by 'completion bash'; %s are the commands and the
// per-command sub-verb cases.
const bashCompletion = `# bash completion for sloserve; load with: source <(sloserve completion bash)
_sloserve() {
  local cur=${COMP_WORDS[COMP_CWORD]} cmd=${COMP_WORDS[1]} verbs="" path
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "%s help" -- "$cur")); return
  fi
  case "$cmd" in
%s  esac
  path=$cmd
  if [ -n "$verbs" ]; then
    if [ "$COMP_CWORD" -eq 2 ]; then COMPREPLY=($(compgen -W "$verbs" -- "$cur")); return; fi
    path="$cmd ${COMP_WORDS[2]}"
  fi
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$(${COMP_WORDS[0]} $path -h 2>/dev/null | grep -oE -- '^  --[a-z0-9-]+')" -- "$cur"))
  fi
}
complete -o default -F _sloserve sloserve
`
