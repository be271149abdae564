#!/usr/bin/env bats
# The library's layers (lib/README): no file of lib/ calls a file of a
# layer above its own, none are in a circle, and the levels the README
# shows are the ones the objects have.  Read from the objects this build
# made (make layers).

load helper

ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)

@test "lib/: no circle among its files, no call up a layer" {
	run make -s -C "$ROOT" layers
	assert_success
	assert_output --regexp '^no circles, no calls up: [0-9]+ files in 7 layers$'
}

@test "the layer check fails on a call up a layer (the layers named top first)" {
	run python3 "$ROOT/test/layers.py" "$ROOT/lib" http run out info repl queue base
	assert_failure 1
	assert_output --partial 'up a layer: queue/topic.c -> base/'
}

@test "the layer check refuses a source file outside the layers' folders" {
	mkdir -p "$TD/lib/base"
	cp "$ROOT"/lib/base/error.o "$TD/lib/base/"
	: >"$TD/lib/stray.c"
	run python3 "$ROOT/test/layers.py" "$TD/lib" base
	assert_failure 2
	assert_output --partial "stray.c: not in a layer's folder"
}

@test "lib/README shows the levels make layers LEVELS=1 prints" {
	run make -s -C "$ROOT" layers LEVELS=1
	assert_success
	diff <(sed -n 's/^    \(no circles\|[a-z]* [0-9]*:\)/\1/p' "$ROOT/lib/README") \
	    <(printf '%s\n' "$output")
}
