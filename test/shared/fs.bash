# fs.bash: loads the harness of a test file shared by every file system
# (crosshost.bats, locks.bats): MQ_FS (gluster or moosefs; gluster if
# unset), except that a file named BASE-NAME.bats (crosshost-moosefs.bats,
# a symbolic link to crosshost.bats, so that a run of test/shared runs the
# checks once per file system) takes harness NAME.
FS=${MQ_FS:-gluster}
if [[ ${BATS_TEST_FILENAME##*/} == *-*.bats ]]; then
	FS=${BATS_TEST_FILENAME##*/}
	FS=${FS#*-}
	FS=${FS%.bats}
fi
load "$FS"
