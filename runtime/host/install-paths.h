/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where kvrun's installed files are. The build is configured with a prefix
 * and its directories (meson's bindir, libexecdir, datadir: config.h's
 * KVRUN_BINDIR, KVRUN_LIBEXECDIR, KVRUN_DATADIR); an installed kvrun finds
 * kvrun-init and its kernel there, with no path of its own compiled in.
 *
 * The directories are taken below the root the running binary was
 * installed under: "" for a binary in KVRUN_BINDIR itself, and DIR for one
 * at DIR/KVRUN_BINDIR/kvrun, as `meson install --destdir DIR` or an
 * unpacked package leaves it. A binary anywhere else (the build tree) uses
 * the configured directories as they are.
 */
#ifndef KVRUN_RUNTIME_HOST_INSTALL_PATHS_H
#define KVRUN_RUNTIME_HOST_INSTALL_PATHS_H

enum install_dir {
	INSTALL_BINDIR,
	INSTALL_LIBEXECDIR, /* <libexecdir>/kvrun: kvrun-init */
	INSTALL_DATADIR, /* <datadir>/kvrun: kernel/ */
};

/* The root the running binary is installed under ("" when it runs from
 * KVRUN_BINDIR or from elsewhere, such as the build tree), for exe (the
 * binary's absolute path; NULL: /proc/self/exe). Malloc'd into *ret. */
int install_root(const char *exe, char **ret);

/* "<root><dir>/<rel>" (rel NULL: the directory itself) for the running
 * binary. Malloc'd into *ret. */
int install_path(enum install_dir dir, const char *rel, char **ret);

/* The configured directory (without any root). */
const char *install_dir_configured(enum install_dir dir);

/* The default guest kernel: install_path(INSTALL_DATADIR, "kernel/vmlinux"). */
int install_default_kernel(char **ret);

#endif
