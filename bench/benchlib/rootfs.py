# SPDX-License-Identifier: Apache-2.0
"""Root filesystems for the benchmarks, made from this host's Debian
packages: a binary is copied with every library ldd names and the dynamic
loader, at the same paths; whole data directories (PostgreSQL's share/,
gcc's libexec/, /usr/include) are copied as they are. Each tree is built
once into bench/.cache/rootfs/<name>/ and reused while its recipe (the
RECIPE_VERSION and the binaries' paths) is unchanged.
"""
import os
import re
import shutil
import subprocess

from .util import log, sh

RECIPE_VERSION = "9"

BUSYBOX_APPLETS = ["sh", "true", "echo", "sleep", "cat", "ls", "rm", "mkdir", "tar", "sync", "env",
                   "head", "wc", "chown", "id", "cp"]
PG_BIN = "/usr/lib/postgresql/15/bin"

PASSWD = ("root:x:0:0:root:/root:/bin/sh\n"
          "postgres:x:999:999:PostgreSQL:/var/lib/postgresql:/bin/sh\n"
          "nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")
GROUP = "root:x:0:\npostgres:x:999:\nnogroup:x:65534:\n"

NGINX_CONF = """daemon off;
master_process on;
worker_processes 1;
user nobody nogroup;
pid /tmp/nginx.pid;
error_log stderr warn;
events { worker_connections 256; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 100000;
    client_body_temp_path /tmp/nginx-body;
    server {
        listen 8080 reuseport;
        root /srv;
        default_type application/octet-stream;
    }
}
"""

# Runs inside the tools container: times each step with the container's
# own clock (so a runtime's start cost is not in these figures) and prints
# "BENCH name start end" lines and fio's JSON between markers.
#   cpuio.sh FIO_SECONDS STEP_LIMIT_SECONDS STEP...
# A step still running after STEP_LIMIT_SECONDS is killed ("BENCH-TIMEOUT
# name limit") and the steps after it are skipped ("BENCH-SKIP name"). The
# watchdog (a background sleep) is started before each step's clock, so
# every runtime runs the same commands inside the timed span.
CPUIO_SH = r"""#!/bin/bash
fio_s=${1:-8}
limit=${2:-1200}
shift 2
stopped=
t() {
	if [ -n "$stopped" ]; then echo "BENCH-SKIP $name"; return 0; fi
	sleep "$limit" &
	local w=$! s=$EPOCHREALTIME
	"$@" &
	local p=$!
	wait -n $p $w
	local e=$EPOCHREALTIME
	if kill -0 $p 2>/dev/null; then
		kill -KILL $p; wait $p
		echo "BENCH-TIMEOUT $name $limit"
		stopped=1
		return 0
	fi
	wait $p; local rc=$?
	kill $w 2>/dev/null; wait $w 2>/dev/null
	if [ $rc != 0 ]; then echo "BENCH-FAIL $name $rc"; exit 1; fi
	echo "BENCH $name $s $e"
}
rm -rf /work/*
for step in "$@"; do
	name=$step
	sync  # each step starts with no dirty pages of the previous one
	case $step in
	bc) t bash -c "echo '2^1000000' | bc >/dev/null" ;;
	tar_small) t tar -xf /srcdata/small.tar -C /work ;;
	rm_small) t rm -rf /work/small ;;
	tar_unpack) t tar -xf /srcdata/tree.tar -C /work ;;
	rm_rf) t rm -rf /work/usr ;;
	compile)
		(cd /src && make -s clean) && sync
		cd /src && t make -s -j2; make -s clean; cd / ;;
	fio)
		[ -n "$stopped" ] && { echo "BENCH-SKIP fio"; continue; }
		for rw in randread randwrite; do
			echo "FIO-BEGIN $rw"
			fio --name=$rw --filename=/work/fio.dat --size=256M --bs=4k --rw=$rw --direct=1 \
				--ioengine=psync --runtime=$fio_s --time_based --output-format=json
			echo "FIO-END"
		done
		rm -f /work/fio.dat ;;
	*) echo "BENCH-FAIL $step unknown"; exit 1 ;;
	esac
done
"""

# The small tree of the tar_small and rm_small steps: glibc's bits/ headers.
SMALL_TREE = "usr/include/x86_64-linux-gnu/bits"

# Files nginx serves: name -> bytes.
NGINX_FILES = {"1k": 1024, "100k": 100 * 1024, "10m": 10 * 1024 * 1024}


def ldd_libs(path):
    """Absolute paths of the shared objects path needs (with the loader)."""
    r = subprocess.run(["ldd", path], capture_output=True, text=True)
    libs = []
    for line in r.stdout.splitlines():
        m = re.search(r"=>\s+(/\S+)", line) or re.match(r"\s*(/\S+)\s+\(", line)
        if m:
            libs.append(m.group(1))
    return libs


def copy_path(root, path):
    """Copy path into root at the same place, keeping symlinks and their targets."""
    seen = set()
    while path and path not in seen:
        seen.add(path)
        # Directories through host links (/lib64 -> usr/lib64) are taken
        # at their real place; the rootfs has the same top-level links.
        path = os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
        dst = root + path
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if os.path.islink(path):
            target = os.readlink(path)
            if not os.path.lexists(dst):
                os.symlink(target, dst)
            path = os.path.normpath(os.path.join(os.path.dirname(path), target))
            continue
        if os.path.isdir(path):
            sh(["cp", "-a", "--no-preserve=ownership", path + "/.", dst + "/"] if os.path.exists(dst)
               else ["cp", "-a", path, dst])
        elif not os.path.exists(dst):
            shutil.copy2(path, dst)
        break


def add_binary(root, path):
    """Copy an executable or shared object with everything ldd says it needs."""
    copy_path(root, path)
    real = os.path.realpath(path)
    for lib in ldd_libs(real):
        copy_path(root, lib)
    # /lib64 -> usr/lib64 etc. on merged-/usr Debian: keep the top links.
    for top in ("lib", "lib64", "bin", "sbin"):
        if os.path.islink("/" + top) and not os.path.lexists(f"{root}/{top}"):
            os.symlink(os.readlink("/" + top), f"{root}/{top}")


def skeleton(root):
    for d in ("proc", "sys", "dev", "tmp", "etc", "run", "usr/bin", "usr/lib", "usr/sbin", "work"):
        os.makedirs(f"{root}/{d}", exist_ok=True)
    os.chmod(f"{root}/tmp", 0o1777)
    for top in ("lib", "lib64", "bin", "sbin"):
        if os.path.islink("/" + top):
            os.symlink(os.readlink("/" + top), f"{root}/{top}")
    with open(f"{root}/etc/passwd", "w") as f:
        f.write(PASSWD)
    with open(f"{root}/etc/group", "w") as f:
        f.write(GROUP)
    with open(f"{root}/etc/hosts", "w") as f:
        f.write("127.0.0.1 localhost\n")
    bb = "/usr/bin/busybox" if os.path.exists("/usr/bin/busybox") else "/bin/busybox"
    shutil.copy2(bb, f"{root}/usr/bin/busybox")
    for a in BUSYBOX_APPLETS:
        dst = f"{root}/usr/bin/{a}"
        if not os.path.lexists(dst):
            os.symlink("busybox", dst)


def build_busybox(root):
    skeleton(root)


def build_memhog(root, src_dir):
    """The busybox tree and memhog (tests/integration/memhog.c, linked
    static): allocates, writes, holds and frees memory on cue."""
    skeleton(root)
    os.makedirs(f"{root}/usr/local/bin", exist_ok=True)
    sh(["gcc", "-O2", "-static", "-o", f"{root}/usr/local/bin/memhog",
        os.path.join(src_dir, "tests", "integration", "memhog.c")])


def build_tools(root, src_dir):
    """bc, tar, fio, make and gcc (compile only), plus the C project to build."""
    skeleton(root)
    for b in ("/usr/bin/bc", "/usr/bin/tar", "/usr/bin/fio", "/usr/bin/make", "/usr/bin/gzip",
              "/usr/bin/x86_64-linux-gnu-gcc-12", "/usr/bin/x86_64-linux-gnu-as", "/usr/bin/rm",
              "/usr/bin/bash"):
        add_binary(root, b)
    # busybox's tar and rm would shadow GNU's: use the real ones.
    for b in ("tar", "rm"):
        os.unlink(f"{root}/usr/bin/{b}")
        add_binary(root, f"/usr/bin/{b}")
    os.symlink("x86_64-linux-gnu-gcc-12", f"{root}/usr/bin/gcc")
    os.symlink("x86_64-linux-gnu-as", f"{root}/usr/bin/as")
    gcc_dir = "/usr/lib/gcc/x86_64-linux-gnu/12"
    # Compile only (-c): the C front end and gcc's own headers.
    for part in ("cc1", "include", "include-fixed"):
        if os.path.exists(f"{gcc_dir}/{part}"):
            copy_path(root, f"{gcc_dir}/{part}")
    for lib in ldd_libs(f"{gcc_dir}/cc1"):
        copy_path(root, lib)
    for lib in ldd_libs(os.path.realpath("/usr/bin/x86_64-linux-gnu-as")):
        copy_path(root, lib)
    copy_path(root, "/usr/include")
    # The C project: kvrun's own common/, vmm/ and virtio/ layers (plain C,
    # libc and kernel headers only), with a generated Makefile.
    proj = f"{root}/src"
    os.makedirs(proj, exist_ok=True)
    objs = []
    for layer in ("common", "vmm", "virtio"):
        shutil.copytree(f"{src_dir}/{layer}", f"{proj}/{layer}")
        for fn in sorted(os.listdir(f"{proj}/{layer}")):
            if fn.endswith(".c"):
                objs.append(f"{layer}/{fn[:-2]}.o")
    with open(f"{proj}/Makefile", "w") as f:
        f.write("CFLAGS = -O2 -std=gnu11 -I. -D_GNU_SOURCE -w\n"
                f"OBJS = {' '.join(objs)}\n"
                "all: $(OBJS)\n%.o: %.c\n\tgcc $(CFLAGS) -c -o $@ $<\n"
                "clean:\n\trm -f $(OBJS)\n")
    # The tree tar unpacks and rm -rf removes: the rootfs's own /usr/include.
    os.makedirs(f"{root}/srcdata")
    sh(["tar", "-cf", f"{root}/srcdata/tree.tar", "-C", root, "usr/include"])
    # The small tree, unpacked below /work/small.
    sh(["tar", "-cf", f"{root}/srcdata/small.tar", "--transform", "s,^bits,small/bits,",
        "-C", os.path.dirname(f"/{SMALL_TREE}"), "bits"])
    os.makedirs(f"{root}/usr/local/bin", exist_ok=True)
    with open(f"{root}/usr/local/bin/cpuio.sh", "w") as f:
        f.write(CPUIO_SH)
    os.chmod(f"{root}/usr/local/bin/cpuio.sh", 0o755)


def build_postgres(root):
    skeleton(root)
    for b in ("postgres", "initdb", "pg_ctl"):
        add_binary(root, f"{PG_BIN}/{b}")
    # Extensions and procedural languages, without the JIT (llvmjit and its
    # bitcode pull in LLVM, 100+ MB; jit is off in postgresql.auto.conf).
    libdir = "/usr/lib/postgresql/15/lib"
    for so in os.listdir(libdir):
        if so.endswith(".so") and not so.startswith("llvmjit"):
            copy_path(root, f"{libdir}/{so}")
            for lib in ldd_libs(f"{libdir}/{so}"):
                copy_path(root, lib)
    copy_path(root, "/usr/share/postgresql/15")
    os.makedirs(f"{root}/var/lib/postgresql", exist_ok=True)
    os.makedirs(f"{root}/var/run/postgresql", exist_ok=True)
    for z in ("UTC", "Etc/UTC", "GMT"):
        copy_path(root, f"/usr/share/zoneinfo/{z}")
    # One data directory made once, by the same initdb binary run on the
    # host; each run starts from a copy of it.
    tmpl = f"{root}/var/lib/postgresql/template"
    os.makedirs(tmpl)
    sh(["chown", "postgres:", tmpl])
    sh(["runuser", "-u", "postgres", "--", f"{PG_BIN}/initdb", "-D", tmpl, "--no-locale", "-E", "UTF8",
        "--auth=trust", "-U", "postgres"], cwd="/")
    with open(f"{tmpl}/postgresql.auto.conf", "a") as f:
        f.write("listen_addresses = '*'\nport = 5432\nunix_socket_directories = '/tmp'\n"
                "shared_buffers = 128MB\nmax_connections = 20\nlogging_collector = off\n"
                "timezone = 'UTC'\nlog_timezone = 'UTC'\njit = off\n")
    with open(f"{tmpl}/pg_hba.conf", "a") as f:
        f.write("host all all 10.213.0.0/16 trust\n")
    sh(["chown", "-R", "999:999", f"{root}/var/lib/postgresql", f"{root}/var/run/postgresql"])


def build_nginx(root):
    skeleton(root)
    add_binary(root, "/usr/sbin/nginx")
    for d in ("etc/nginx", "var/lib/nginx", "var/log/nginx", "srv"):
        os.makedirs(f"{root}/{d}", exist_ok=True)
    with open(f"{root}/etc/nginx/nginx.conf", "w") as f:
        f.write(NGINX_CONF)
    for name, size in NGINX_FILES.items():
        with open(f"{root}/srv/{name}", "wb") as f:
            f.write(os.urandom(size))
    os.chmod(f"{root}/srv", 0o755)


# The net container's process: iperf3's server in the background, nginx
# in the foreground (the container lives as long as nginx does).
NETSERVE_SH = """#!/bin/sh
/usr/bin/iperf3 -s -p 5201 &
exec /usr/sbin/nginx
"""


def add_small_cpuio(root):
    """cpuio.sh with what its small steps need (bash, bc, GNU tar and rm,
    the small tree's tarball)."""
    for b in ("/usr/bin/bc", "/usr/bin/bash"):
        add_binary(root, b)
    for b in ("tar", "rm"):  # busybox's would shadow GNU's
        if os.path.lexists(f"{root}/usr/bin/{b}"):
            os.unlink(f"{root}/usr/bin/{b}")
        add_binary(root, f"/usr/bin/{b}")
    os.makedirs(f"{root}/srcdata", exist_ok=True)
    sh(["tar", "-cf", f"{root}/srcdata/small.tar", "--transform", "s,^bits,small/bits,",
        "-C", os.path.dirname(f"/{SMALL_TREE}"), "bits"])
    os.makedirs(f"{root}/usr/local/bin", exist_ok=True)
    with open(f"{root}/usr/local/bin/cpuio.sh", "w") as f:
        f.write(CPUIO_SH)
    os.chmod(f"{root}/usr/local/bin/cpuio.sh", 0o755)


def build_net(root):
    """nginx (as in the nginx tree) and iperf3, both served by one
    container; and cpuio.sh's small steps, which an emulated kvrun guest
    runs in the same boot (`exec`)."""
    build_nginx(root)
    add_binary(root, "/usr/bin/iperf3")
    add_small_cpuio(root)
    with open(f"{root}/usr/local/bin/netserve.sh", "w") as f:
        f.write(NETSERVE_SH)
    os.chmod(f"{root}/usr/local/bin/netserve.sh", 0o755)


BUILDERS = {
    "busybox": lambda root, src: build_busybox(root),
    "tools": build_tools,
    "postgres": lambda root, src: build_postgres(root),
    "nginx": lambda root, src: build_nginx(root),
    "net": lambda root, src: build_net(root),
    "memhog": build_memhog,
}


def du_bytes(root):
    r = sh(["du", "-sb", root], check=False)
    return int(r.stdout.split()[0]) if r.returncode == 0 else None


def ensure(cache, name, src_dir):
    """Path of the rootfs tree `name`, building it when missing or stale."""
    root = os.path.abspath(os.path.join(cache, "rootfs", name))
    stamp = root + ".stamp"
    if os.path.isdir(root) and os.path.exists(stamp) and open(stamp).read() == RECIPE_VERSION:
        return root
    if os.path.exists(root):
        shutil.rmtree(root)
    log(f"building rootfs {name} in {root}")
    os.makedirs(root)
    BUILDERS[name](root, src_dir)
    with open(stamp, "w") as f:
        f.write(RECIPE_VERSION)
    return root
