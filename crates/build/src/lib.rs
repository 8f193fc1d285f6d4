//! What the build scripts of both addons (the client's and the testing kit's) do: napi-build's
//! set-up, and on macOS the link arguments that make the binary what its platform package ships.

/// Sets up the build of the addon published as `<binary_name>.<platform>.node`.
pub fn setup(binary_name: &str) {
    napi_build::setup();
    macos_link_args(binary_name);
}

/// macOS: the addon's install name is its published file name, not the path it was linked at on
/// the build machine, and a system library none of its symbols come from (libiconv, which the
/// `libc` crate names for every Apple target) is not loaded. Apple's linker and zig's (cross-linked
/// by scripts/build-macos.sh, which checks the result) take the same arguments.
fn macos_link_args(binary_name: &str) {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("macos") {
        return;
    }
    let arch = match std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() {
        Ok("aarch64") => "arm64",
        Ok("x86_64") => "x64",
        Ok(other) => panic!("no macOS package for the architecture {other}"),
        Err(e) => panic!("CARGO_CFG_TARGET_ARCH: {e}"),
    };
    println!(
        "cargo:rustc-cdylib-link-arg=-Wl,-install_name,@rpath/{binary_name}.darwin-{arch}.node"
    );
    println!("cargo:rustc-cdylib-link-arg=-Wl,-dead_strip_dylibs");
}
