package engine

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Skills: a YAML AI node's `skills:` names Claude Code skills, folders with
// a SKILL.md (front matter with name and description, then instructions).
// The node names them itself, so each one found is loaded whole into its
// system prompt rather than offered for the model to pick; one not found
// is a warning in the run log, and the node runs without it (Archon's
// workflows call skills optional: "install it for higher quality output").

// maxSkillBytes bounds one SKILL.md loaded into a system prompt.
const maxSkillBytes = 256 << 10

// skillDirs are where a skill is looked for, first found wins: the run's
// folder (.claude/skills, then .agents/skills, where `npx skills add`
// installs), then the user's ~/.claude/skills.
func skillDirs(workDir string) []string {
	var dirs []string
	if workDir != "" {
		dirs = append(dirs, filepath.Join(workDir, ".claude", "skills"), filepath.Join(workDir, ".agents", "skills"))
	}
	if home, err := os.UserHomeDir(); err == nil && home != "" {
		dirs = append(dirs, filepath.Join(home, ".claude", "skills"))
	}
	return dirs
}

// loadSkills returns the system prompt's skills section for names and a
// warning for each skill that could not be loaded.
func loadSkills(workDir string, names []string) (section string, warnings []string) {
	if len(names) == 0 {
		return "", nil
	}
	dirs := skillDirs(workDir)
	var b strings.Builder
	for _, name := range names {
		text, dir, err := readSkill(dirs, name)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("skill %q: %v; the node runs without it", name, err))
			continue
		}
		meta, body := splitFrontMatter(text)
		fmt.Fprintf(&b, "\n\n# Skill: %s\n", name)
		if d := meta["description"]; d != "" {
			fmt.Fprintf(&b, "%s\n", d)
		}
		fmt.Fprintf(&b, "(Its files are in %s.)\n\n%s", dir, strings.TrimSpace(body))
	}
	if b.Len() == 0 {
		return "", warnings
	}
	return "\n\nYou have these skills; follow their instructions where they apply." + b.String(), warnings
}

// readSkill reads the first <dir>/<name>/SKILL.md of dirs.
func readSkill(dirs []string, name string) (text, dir string, err error) {
	for _, d := range dirs {
		p := filepath.Join(d, name, "SKILL.md")
		f, err := os.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", "", err
		}
		data, err := io.ReadAll(io.LimitReader(f, maxSkillBytes+1))
		f.Close()
		if err != nil {
			return "", "", fmt.Errorf("read %s: %w", p, err)
		}
		if len(data) > maxSkillBytes {
			return "", "", fmt.Errorf("%s is over %d KiB", p, maxSkillBytes>>10)
		}
		return string(data), filepath.Dir(p), nil
	}
	return "", "", fmt.Errorf("no %s/SKILL.md in %s", name, strings.Join(dirs, ", "))
}

// splitFrontMatter separates a SKILL.md's front matter (--- lines around
// key: value pairs) from its body; only single-line values are read.
func splitFrontMatter(text string) (map[string]string, string) {
	meta := map[string]string{}
	t := strings.TrimPrefix(text, "\ufeff")
	if !strings.HasPrefix(t, "---\n") && !strings.HasPrefix(t, "---\r\n") {
		return meta, text
	}
	rest := t[strings.Index(t, "\n")+1:]
	end := -1
	for off := 0; off < len(rest); {
		nl := strings.IndexByte(rest[off:], '\n')
		line := rest[off:]
		if nl >= 0 {
			line = rest[off : off+nl]
		}
		if strings.TrimRight(line, "\r") == "---" {
			end = off
			break
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			v = strings.Trim(strings.TrimSpace(v), `"'`)
			meta[strings.TrimSpace(k)] = v
		}
		if nl < 0 {
			break
		}
		off += nl + 1
	}
	if end < 0 {
		return map[string]string{}, text
	}
	body := rest[end:]
	if i := strings.IndexByte(body, '\n'); i >= 0 {
		body = body[i+1:]
	} else {
		body = ""
	}
	return meta, body
}
