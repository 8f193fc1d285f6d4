fn main() {
    ctl_migration_build::setup("ctl-migration");
}
