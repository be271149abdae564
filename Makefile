# mq: a message queue made of small Unix tools.  See README.md.
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR ?= $(PREFIX)/share/zsh/site-functions
SYSTEMDDIR ?= $(LIBDIR)/systemd/system

PKGS = libbsd-overlay jansson libxxhash libarchive libsodium libacl \
	libmicrohttpd libjwt libcrypto
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS))
PKG_LIBS := $(shell pkg-config --libs $(PKGS))

CFLAGS ?= -O2 -g
# Warnings stay on whatever CFLAGS the user sets.
override CFLAGS := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wshadow \
	-Wstrict-prototypes -Wmissing-prototypes -Wno-missing-field-initializers \
	-fPIC $(CFLAGS)
# The library's layers, bottom first (lib/README): each calls only those
# below it, which `make layers` checks.
LAYERS = base queue repl info out run http
override CPPFLAGS := -Ilib $(LAYERS:%=-Ilib/%) $(PKG_CFLAGS) $(CPPFLAGS)
LDLIBS += $(PKG_LIBS) -ljq -lm
# A tool links only the libraries it uses (mq-dlq alone needs libarchive),
# which keeps fork() for --exec handlers cheap.
override LDFLAGS := -Wl,--as-needed $(LDFLAGS)

TOOLS = mq-pub mq-sub mq-ack mq-topic mq-dlq mq-group mq-replicate mq-stat \
	mq-req mq-http
LIB_SRC = $(foreach l,$(LAYERS),$(wildcard lib/$(l)/*.c))
LIB_H = $(wildcard lib/*/*.h)
LIB_OBJ = $(LIB_SRC:.c=.o)
TOOL_OBJ = src/tool.o
UNIT_SRC = $(wildcard test/unit/*.c)
UNIT_BIN = $(UNIT_SRC:.c=)
MAN1 = $(TOOLS:%=man/%.1)
MAN5 = man/mq-spool.5 man/mq-protocol.5
SOVERSION = 0

all: $(TOOLS:%=bin/%) lib/libmq.a lib/libmq.so.$(SOVERSION)

lib/libmq.a: $(LIB_OBJ)
	$(AR) rcs $@ $(LIB_OBJ)

lib/libmq.so.$(SOVERSION): $(LIB_OBJ)
	$(CC) -shared -Wl,-soname,libmq.so.$(SOVERSION) $(LDFLAGS) -o $@ \
		$(LIB_OBJ) $(LDLIBS)

$(LIB_OBJ) $(TOOL_OBJ) $(TOOLS:%=src/%.o): lib/mq.h $(LIB_H) src/tool.h

bin/%: src/%.o $(TOOL_OBJ) lib/libmq.a
	@mkdir -p bin
	$(CC) $(LDFLAGS) -o $@ $< $(TOOL_OBJ) lib/libmq.a $(LDLIBS)

test/unit/%: test/unit/%.c lib/libmq.a $(LIB_H)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< lib/libmq.a $(LDLIBS)

# The just-built tools come first on PATH; stdin is closed so that no test
# can wait on a terminal.
check: all $(UNIT_BIN)
	@PATH="$(CURDIR)/bin:$$PATH" test/run $(UNIT_BIN) < /dev/null

# The same suite under AddressSanitizer and UndefinedBehaviorSanitizer,
# built in a separate tree so the normal build is untouched.  The SIGKILL
# loops run fewer rounds there (the same code paths; check-all's time is
# bounded): CRASH_ROUNDS (30 as built) and PIPELINE_ROUNDS (50), named
# outside MQ_ so that no tool passes them on to a handler.
# san-build makes that tree alone (check-all builds it while other runs
# wait on file systems); check-sanitize builds what is missing, then runs.
SAN_FLAGS = CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
	LDFLAGS="-fsanitize=address,undefined"
san-build:
	rm -rf build/san && mkdir -p build/san
	cp -r Makefile lib src test completions man systemd build/san/
	$(MAKE) -s -C build/san clean
	$(MAKE) -C build/san all $(UNIT_BIN) $(SAN_FLAGS)

check-sanitize:
	[ -f build/san/Makefile ] || $(MAKE) san-build
	CRASH_ROUNDS=10 PIPELINE_ROUNDS=15 $(MAKE) -C build/san check $(SAN_FLAGS)

# Hosts sharing a spool: a GlusterFS volume, a MooseFS file system and an
# sshfs export, each mounted twice (needs root and FUSE; slow per file, so
# run once, not again under the sanitizers).  crosshost.bats and
# locks.bats run once per file system (crosshost-moosefs.bats and
# locks-moosefs.bats are links to them; test/shared/fs.bash).
check-shared: all
	@PATH="$(CURDIR)/bin:$$PATH" BATS_FILES="$(CURDIR)/test/shared" \
		test/run < /dev/null

# Long runs (test/slow: a journal kept bounded over 200,000 messages, and
# format 2 under SIGKILL at random),
# once in check-all, not again under the sanitizers.
check-slow: all
	@PATH="$(CURDIR)/bin:$$PATH" BATS_FILES="$(CURDIR)/test/slow" \
		test/run < /dev/null

# libFuzzer harnesses (test/fuzz) for what the tools read from the spool
# and for what a replication peer sends (fuzz_frame: the frames of a
# session, either side; fuzz_recv: batches applied to a fresh spool) and
# a WebSocket client (fuzz_wsframe), with clang, ASan and UBSan,
# FUZZ_SECONDS each.
FUZZ_SECONDS ?= 12
FUZZ_SAN = -fsanitize=address,undefined -fno-sanitize-recover=all
fuzz:
	rm -rf build/fuzz && mkdir -p build/fuzz
	cp -r Makefile lib src build/fuzz/
	$(MAKE) -C build/fuzz lib/libmq.a CC=clang \
		CFLAGS="-O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer-no-link $(FUZZ_SAN)"
	for f in test/fuzz/fuzz_*.c; do \
		clang $(CPPFLAGS) -std=c11 -Wall -Wextra -Werror -O1 -g \
		    -fsanitize=fuzzer $(FUZZ_SAN) \
		    -o build/fuzz/$$(basename $$f .c) $$f build/fuzz/lib/libmq.a \
		    $(LDLIBS) || exit 1; \
	done
	test/fuzz/run build/fuzz $(FUZZ_SECONDS)

# Which files of lib/ call which: fails on a circle among them or a call
# up a layer (lib/README); LEVELS=1 prints each layer's files by level.
# test/bats/layers.bats runs it in check.
layers: $(LIB_OBJ)
	@python3 test/layers.py $(if $(LEVELS),--levels) lib $(LAYERS)

# What CI runs: check, check-shared with fuzz beside it, check-slow, then
# check-sanitize, with one summary line.
check-all:
	@test/all

bench: all
	bench/run.sh

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) \
		$(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 \
		$(DESTDIR)$(MANDIR)/man7 $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR)
	install -m 755 $(TOOLS:%=bin/%) $(DESTDIR)$(BINDIR)
	install -m 644 lib/libmq.a $(DESTDIR)$(LIBDIR)
	install -m 755 lib/libmq.so.$(SOVERSION) $(DESTDIR)$(LIBDIR)
	ln -sf libmq.so.$(SOVERSION) $(DESTDIR)$(LIBDIR)/libmq.so
	install -m 644 lib/mq.h $(DESTDIR)$(INCLUDEDIR)
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig
	sed -e 's|@PREFIX@|$(PREFIX)|; s|@LIBDIR@|$(LIBDIR)|; s|@INCLUDEDIR@|$(INCLUDEDIR)|' \
		lib/mq.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/mq.pc
	install -m 644 $(MAN1) $(DESTDIR)$(MANDIR)/man1
	install -m 644 $(MAN5) $(DESTDIR)$(MANDIR)/man5
	install -m 644 man/mq.7 $(DESTDIR)$(MANDIR)/man7
	install -m 644 completions/mq.bash $(DESTDIR)$(BASHCOMPDIR)/mq
	for t in $(TOOLS); do ln -sf mq $(DESTDIR)$(BASHCOMPDIR)/$$t; done
	install -m 644 completions/_mq $(DESTDIR)$(ZSHCOMPDIR)/_mq
	install -d $(DESTDIR)$(SYSTEMDDIR)
	install -m 644 systemd/mq-http.socket $(DESTDIR)$(SYSTEMDDIR)
	sed 's|/usr/local/bin/|$(BINDIR)/|' systemd/mq-http.service \
		> $(DESTDIR)$(SYSTEMDDIR)/mq-http.service

clean:
	rm -f lib/*/*.o src/*.o lib/libmq.a lib/libmq.so.* $(UNIT_BIN)
	rm -rf bin/mq-* build

.PHONY: layers all check check-shared check-slow san-build check-sanitize check-all fuzz bench install clean
