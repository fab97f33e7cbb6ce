// SPDX-License-Identifier: MIT
// Rust names (tests/e2e/64-rust-names.sh): a generic function (work::<u32> in v0
// mangling), a closure called through a trait object (outer::{{closure}} in legacy,
// outer::{closure#0} in v0), nested in a module.  Built by the test with rustc, in
// both manglings.  Argument: seconds to run (default 2).
use std::time::{Duration, Instant};

mod dm {
    pub trait Mix: Copy {
        fn wide(self) -> u64;
    }
    impl Mix for u32 {
        fn wide(self) -> u64 {
            self as u64
        }
    }

    #[inline(never)]
    pub fn work<T: Mix>(x: T, n: u64) -> u64 {
        let mut s = 0u64;
        for i in 0..n {
            s = s.wrapping_mul(31).wrapping_add(i ^ x.wide());
        }
        s
    }

    #[inline(never)]
    pub fn outer(n: u64) -> u64 {
        let f = |k: u32| work(k, n) ^ u64::from(k);
        // An indirect call the optimizer cannot see through: the closure stays a function.
        let r: &dyn Fn(u32) -> u64 = &f;
        let r = unsafe { std::ptr::read_volatile(&r) };
        r(3)
    }
}

fn main() {
    let secs: f64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(2.0);
    let end = Instant::now() + Duration::from_secs_f64(secs);
    let mut acc = 0u64;
    while Instant::now() < end {
        acc = acc.wrapping_add(dm::outer(200_000));
    }
    println!("{}", acc);
}
