package main

import (
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// dropPrivileges makes tern serve run as the user and group of
// [server] user and group (group: the user's primary group when empty)
// once its sockets are bound: it gives them the paths it writes later
// (owned recursively: data-dir with its journals and transferred zones;
// the control socket and its directory), then sets the supplementary
// groups to the one group, the group, and the user, in that order (a
// process that has set its user can no longer set its groups). Since Go
// 1.16 these calls apply to every thread of the process. Files created
// under those paths between the chown and the drop (a refresh writing
// a zone) stay root's; zone file directories that zonefile-sync
// rewrites and a managed trust-anchor file must be the user's already.
func dropPrivileges(userName, groupName string, owned []string) (uid, gid int, err error) {
	u, err := user.Lookup(userName)
	if err != nil {
		return 0, 0, fmt.Errorf("server.user: %w", err)
	}
	gidStr := u.Gid
	if groupName != "" {
		g, err := user.LookupGroup(groupName)
		if err != nil {
			return 0, 0, fmt.Errorf("server.group: %w", err)
		}
		gidStr = g.Gid
	}
	if uid, err = strconv.Atoi(u.Uid); err != nil {
		return 0, 0, fmt.Errorf("server.user %s: uid %q: %w", userName, u.Uid, err)
	}
	if gid, err = strconv.Atoi(gidStr); err != nil {
		return 0, 0, fmt.Errorf("server.group: gid %q: %w", gidStr, err)
	}
	for _, p := range owned {
		if p == "" {
			continue
		}
		err := filepath.WalkDir(p, func(path string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(path, uid, gid)
		})
		if err != nil && !os.IsNotExist(err) {
			return 0, 0, fmt.Errorf("giving %s to %s: %w", p, userName, err)
		}
	}
	if err := syscall.Setgroups([]int{gid}); err != nil {
		return 0, 0, fmt.Errorf("setgroups %d: %w", gid, err)
	}
	if err := syscall.Setgid(gid); err != nil {
		return 0, 0, fmt.Errorf("setgid %d: %w", gid, err)
	}
	if err := syscall.Setuid(uid); err != nil {
		return 0, 0, fmt.Errorf("setuid %d: %w", uid, err)
	}
	return uid, gid, nil
}
