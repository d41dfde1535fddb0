package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCookies: the [cookies] table, its defaults without it, its
// secrets (inline or from a file, relative to the config's directory).
func TestCookies(t *testing.T) {
	c, err := Parse("t.toml", []byte("[server]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if k := c.Cookies; !k.AnswerCookie || k.SecretLifetime.Duration != 24*time.Hour || k.Secret != nil || k.SecretFile != "" {
		t.Errorf("defaults: %+v", k)
	}
	if s, err := c.Cookies.Secrets(); err != nil || s != nil {
		t.Errorf("no secret: %v %v", s, err)
	}
	c, err = Parse("t.toml", []byte("[cookies]\nanswer-cookie = false\nsecret = [\"000102030405060708090a0b0c0d0e0f\", \"0xF0E0D0C0B0A090807060504030201000\"]\nsecret-lifetime = \"26h\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.Cookies.Secrets()
	if err != nil || len(s) != 2 || s[0][1] != 1 || s[1][0] != 0xF0 || c.Cookies.AnswerCookie || c.Cookies.SecretLifetime.Duration != 26*time.Hour {
		t.Errorf("set: %+v %v %v", c.Cookies, s, err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "secrets"), []byte("# active\n000102030405060708090a0b0c0d0e0f\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err = Parse(filepath.Join(dir, "t.toml"), []byte("[cookies]\nsecret-file = \"secrets\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s, err := c.Cookies.Secrets(); err != nil || len(s) != 1 || s[0][15] != 15 {
		t.Errorf("file: %v %v", s, err)
	}
}

// TestCookiesErrors: each mistake named with its line; a secret is
// never repeated in a message; the secret file's errors name its line.
func TestCookiesErrors(t *testing.T) {
	const bad = "000102030405060708090a0b0c0d0e0g"
	for _, tc := range []struct {
		input string
		want  []string
	}{
		{"[cookies]\nsecret = [\n \"0001\",\n \"" + bad + "\"]\n",
			[]string{"t.toml:3: cookies.secret: a secret is 32 hexadecimal digits (128 bits), got 4 characters", "t.toml:4: cookies.secret: a secret is 32 hexadecimal digits (128 bits): not hexadecimal"}},
		{"[cookies]\nsecret = [\"000102030405060708090a0b0c0d0e0f\", \"000102030405060708090a0b0c0d0e0f\", \"000102030405060708090a0b0c0d0e0f\"]\n",
			[]string{"t.toml:2: cookies.secret: 3 secrets, at most 2"}},
		{"[cookies]\nsecret = [\"000102030405060708090a0b0c0d0e0f\"]\nsecret-file = \"f\"\n", []string{"t.toml:3: cookies: secret and secret-file are both set"}},
		{"[cookies]\nsecret-lifetime = \"59m\"\n", []string{"t.toml:2: cookies.secret-lifetime: must be at least 1h (a cookie's lifetime), got 59m0s"}},
		{"[cookies]\nsecret = \"000102030405060708090a0b0c0d0e0f\"\n", []string{"t.toml:2: cookies.secret: want a list of secrets"}},
		{"[cookies]\nanswer-cookie = \"no\"\n", []string{"t.toml:2: cookies.answer-cookie: want true or false"}},
		{"[cookies]\ncookie-secret = \"x\"\n", []string{"t.toml:2: unknown key cookies.cookie-secret"}},
	} {
		wantErrors(t, tc.input, tc.want)
		if _, err := Parse("t.toml", []byte(tc.input)); err != nil && strings.Contains(err.Error(), bad) {
			t.Errorf("the message repeats a secret: %v", err)
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "secrets")
	for _, tc := range []struct{ file, want string }{
		{"# only a comment\n", path + ": no secret"},
		{"000102030405060708090a0b0c0d0e0f\n\n" + bad + "\n", path + ":3: a secret is 32 hexadecimal digits (128 bits): not hexadecimal"},
		{"000102030405060708090a0b0c0d0e0f\n000102030405060708090a0b0c0d0e0f\n000102030405060708090a0b0c0d0e0f\n", path + ":3: more than 2 secrets"},
	} {
		if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := Parse(filepath.Join(dir, "t.toml"), []byte("[cookies]\nsecret-file = \"secrets\"\n"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Cookies.Secrets(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.file, err, tc.want)
		} else if strings.Contains(err.Error(), bad) {
			t.Errorf("the message repeats a secret: %v", err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "none")); err == nil {
		t.Fatal("exists")
	}
	c, _ := Parse(filepath.Join(dir, "t.toml"), []byte("[cookies]\nsecret-file = \"none\"\n"))
	if _, err := c.Cookies.Secrets(); err == nil || !strings.Contains(err.Error(), "cookie secret file") {
		t.Errorf("missing file: %v", err)
	}
}
