//! The predefined datatypes (MPI-4.0 §3.2.2, §5.1.1 for the pair types):
//! built once, on first use, into the runtime's datatype table.

use super::*;

/// How the bytes of a predefined basic type are interpreted.
#[derive(Clone, Copy, Debug)]
enum Class {
    Signed,
    Unsigned,
    Float,
    Complex,
    /// Characters, bytes, booleans: never byte-swapped.
    Raw,
}

use self::Class::*;
use crate::ops::Pair;
use Elem::*;

/// The predefined basic types: handle, name, class, and what reductions
/// see of them (quad precision, its complex and half precision are
/// opaque: no reduction kernel computes them). MPICH's handles carry the size in bytes in bits
/// 8-15.
const BASIC: &[(MPI_Datatype, &str, Class, Elem)] = &[
    (abi::MPI_CHAR, "MPI_CHAR", Raw, I8),
    (abi::MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR", Signed, I8),
    (abi::MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", Unsigned, U8),
    (abi::MPI_BYTE, "MPI_BYTE", Raw, Byte),
    (abi::MPI_WCHAR, "MPI_WCHAR", Signed, I32),
    (abi::MPI_SHORT, "MPI_SHORT", Signed, I16),
    (abi::MPI_UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT", Unsigned, U16),
    (abi::MPI_INT, "MPI_INT", Signed, I32),
    (abi::MPI_UNSIGNED, "MPI_UNSIGNED", Unsigned, U32),
    (abi::MPI_LONG, "MPI_LONG", Signed, I64),
    (abi::MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG", Unsigned, U64),
    (abi::MPI_FLOAT, "MPI_FLOAT", Float, F32),
    (abi::MPI_DOUBLE, "MPI_DOUBLE", Float, F64),
    (abi::MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE", Float, LongDouble),
    (abi::MPI_LONG_LONG_INT, "MPI_LONG_LONG_INT", Signed, I64),
    (
        abi::MPI_UNSIGNED_LONG_LONG,
        "MPI_UNSIGNED_LONG_LONG",
        Unsigned,
        U64,
    ),
    (abi::MPI_PACKED, "MPI_PACKED", Raw, Opaque),
    (abi::MPI_INT8_T, "MPI_INT8_T", Signed, I8),
    (abi::MPI_INT16_T, "MPI_INT16_T", Signed, I16),
    (abi::MPI_INT32_T, "MPI_INT32_T", Signed, I32),
    (abi::MPI_INT64_T, "MPI_INT64_T", Signed, I64),
    (abi::MPI_UINT8_T, "MPI_UINT8_T", Unsigned, U8),
    (abi::MPI_UINT16_T, "MPI_UINT16_T", Unsigned, U16),
    (abi::MPI_UINT32_T, "MPI_UINT32_T", Unsigned, U32),
    (abi::MPI_UINT64_T, "MPI_UINT64_T", Unsigned, U64),
    (abi::MPI_C_BOOL, "MPI_C_BOOL", Raw, Bool),
    (abi::MPI_AINT, "MPI_AINT", Signed, I64),
    (abi::MPI_OFFSET, "MPI_OFFSET", Signed, I64),
    (abi::MPI_COUNT, "MPI_COUNT", Signed, I64),
    // MPICH names it by its alias.
    (abi::MPI_C_FLOAT_COMPLEX, "MPI_C_COMPLEX", Complex, C32),
    (
        abi::MPI_C_DOUBLE_COMPLEX,
        "MPI_C_DOUBLE_COMPLEX",
        Complex,
        C64,
    ),
    (
        abi::MPI_C_LONG_DOUBLE_COMPLEX,
        "MPI_C_LONG_DOUBLE_COMPLEX",
        Complex,
        LongDoubleComplex,
    ),
    (abi::MPI_CXX_BOOL, "MPI_CXX_BOOL", Raw, Bool),
    (
        abi::MPI_CXX_FLOAT_COMPLEX,
        "MPI_CXX_FLOAT_COMPLEX",
        Complex,
        C32,
    ),
    (
        abi::MPI_CXX_DOUBLE_COMPLEX,
        "MPI_CXX_DOUBLE_COMPLEX",
        Complex,
        C64,
    ),
    (
        abi::MPI_CXX_LONG_DOUBLE_COMPLEX,
        "MPI_CXX_LONG_DOUBLE_COMPLEX",
        Complex,
        LongDoubleComplex,
    ),
    (abi::MPI_CHARACTER, "MPI_CHARACTER", Raw, Opaque),
    (abi::MPI_LOGICAL, "MPI_LOGICAL", Signed, Logical),
    (abi::MPI_INTEGER, "MPI_INTEGER", Signed, I32),
    (abi::MPI_REAL, "MPI_REAL", Float, F32),
    (
        abi::MPI_DOUBLE_PRECISION,
        "MPI_DOUBLE_PRECISION",
        Float,
        F64,
    ),
    (abi::MPI_COMPLEX, "MPI_COMPLEX", Complex, C32),
    (abi::MPI_DOUBLE_COMPLEX, "MPI_DOUBLE_COMPLEX", Complex, C64),
    (abi::MPI_INTEGER1, "MPI_INTEGER1", Signed, I8),
    (abi::MPI_INTEGER2, "MPI_INTEGER2", Signed, I16),
    (abi::MPI_INTEGER4, "MPI_INTEGER4", Signed, I32),
    (abi::MPI_INTEGER8, "MPI_INTEGER8", Signed, I64),
    (abi::MPI_REAL4, "MPI_REAL4", Float, F32),
    (abi::MPI_REAL8, "MPI_REAL8", Float, F64),
    (abi::MPI_REAL16, "MPI_REAL16", Float, Opaque),
    (abi::MPI_COMPLEX8, "MPI_COMPLEX8", Complex, C32),
    (abi::MPI_COMPLEX16, "MPI_COMPLEX16", Complex, C64),
    (abi::MPI_COMPLEX32, "MPI_COMPLEX32", Complex, Opaque),
    (abi::MPIX_C_FLOAT16, "MPIX_C_FLOAT16", Float, Opaque),
];

/// The predefined pair types: `{first; second}` as a C struct lays it out
/// (MPI-4.0 §6.9.4 for the C ones), and the pair `MPI_MINLOC` and
/// `MPI_MAXLOC` see.
const PAIRS: &[(MPI_Datatype, &str, MPI_Datatype, MPI_Datatype, Elem)] = &[
    (
        abi::MPI_FLOAT_INT,
        "MPI_FLOAT_INT",
        abi::MPI_FLOAT,
        abi::MPI_INT,
        Pair(Pair::FloatInt),
    ),
    (
        abi::MPI_DOUBLE_INT,
        "MPI_DOUBLE_INT",
        abi::MPI_DOUBLE,
        abi::MPI_INT,
        Pair(Pair::DoubleInt),
    ),
    (
        abi::MPI_LONG_INT,
        "MPI_LONG_INT",
        abi::MPI_LONG,
        abi::MPI_INT,
        Pair(Pair::LongInt),
    ),
    (
        abi::MPI_SHORT_INT,
        "MPI_SHORT_INT",
        abi::MPI_SHORT,
        abi::MPI_INT,
        Pair(Pair::ShortInt),
    ),
    (
        abi::MPI_LONG_DOUBLE_INT,
        "MPI_LONG_DOUBLE_INT",
        abi::MPI_LONG_DOUBLE,
        abi::MPI_INT,
        Pair(Pair::LongDoubleInt),
    ),
    (
        abi::MPI_2INT,
        "MPI_2INT",
        abi::MPI_INT,
        abi::MPI_INT,
        Pair(Pair::TwoInt),
    ),
    (
        abi::MPI_2INTEGER,
        "MPI_2INTEGER",
        abi::MPI_INTEGER,
        abi::MPI_INTEGER,
        Pair(Pair::TwoInt),
    ),
    (
        abi::MPI_2REAL,
        "MPI_2REAL",
        abi::MPI_REAL,
        abi::MPI_REAL,
        Pair(Pair::TwoReal),
    ),
    (
        abi::MPI_2DOUBLE_PRECISION,
        "MPI_2DOUBLE_PRECISION",
        abi::MPI_DOUBLE_PRECISION,
        abi::MPI_DOUBLE_PRECISION,
        Pair(Pair::TwoDouble),
    ),
];

/// The predefined pair type whose members are `value` and `index`
/// (`MPI_Type_get_value_index`, MPI-4.1 §6.9.4): the C pairs of a value
/// and an `int`, and Fortran's pairs of two of a kind.
pub(super) fn pair_type(value: MPI_Datatype, index: MPI_Datatype) -> Option<MPI_Datatype> {
    PAIRS
        .iter()
        .find(|&&(_, _, v, i, _)| (v, i) == (value, index))
        .map(|&(h, ..)| h)
}

/// The basic element of a predefined type of `size` bytes: external32
/// keeps every size but `long`'s, which is 4 bytes there (MPI-4.0
/// §13.5.2, Table 13.2).
fn prim(handle: MPI_Datatype, size: u8, class: Class) -> Prim {
    let mut p = match class {
        Signed => Prim::new(size, size, true),
        Unsigned | Float => Prim::new(size, size, false),
        Complex => Prim::new(size, size / 2, false),
        Raw => Prim::new(size, 1, false),
    };
    if matches!(handle, abi::MPI_LONG | abi::MPI_UNSIGNED_LONG) {
        p.ext = 4;
    }
    p
}

/// The predefined types by handle, for lookups without hashing: MPICH's
/// builtin handles (`0x4c00_ssii`) by their index byte `ii`, the pair
/// types (direct handles) by their index.
#[derive(Debug)]
struct Predefined {
    builtin: Vec<Option<Arc<Type>>>,
    direct: Vec<Option<Arc<Type>>>,
}

impl Predefined {
    fn slot(&self, h: MPI_Datatype) -> Option<&Option<Arc<Type>>> {
        let table = match abi::direct_index(Kind::Datatype, h) {
            Some(_) => &self.direct,
            None => &self.builtin,
        };
        table.get((h & 0xff) as usize)
    }

    fn build() -> Self {
        let mut p = Self {
            builtin: vec![None; 256],
            direct: vec![None; 256],
        };
        for (h, t) in build_predefined() {
            let table = match abi::direct_index(Kind::Datatype, h) {
                Some(_) => &mut p.direct,
                None => &mut p.builtin,
            };
            let slot = &mut table[(h & 0xff) as usize];
            assert!(
                slot.is_none(),
                "two predefined datatypes share slot of {h:#x}"
            );
            *slot = Some(t);
        }
        p
    }
}

fn build_predefined() -> HashMap<MPI_Datatype, Arc<Type>> {
    let named = |mut t: Type, h: MPI_Datatype, name: &str, elem: Elem| {
        t.name = name.to_string();
        t.predefined = Some(h);
        t.committed = true;
        t.elem = Some(elem);
        Arc::new(t)
    };
    let mut map: HashMap<MPI_Datatype, Arc<Type>> = BASIC
        .iter()
        .map(|&(h, name, class, elem)| {
            let size = (h as u32 >> 8) as u8;
            let t = Type::predefined_basic(usize::from(size), prim(h, size, class), elem);
            (h, named(t, h, name, elem))
        })
        .collect();
    for &(h, name, a, b, elem) in PAIRS {
        let (a, b) = (map[&a].clone(), map[&b].clone());
        let second = (a.size.next_multiple_of(b.align)) as isize;
        let pieces = [
            Piece {
                disp: 0,
                count: 1,
                ty: &a,
            },
            Piece {
                disp: second,
                count: 1,
                ty: &b,
            },
        ];
        let t = compose(&pieces, true, Envelope::named()).expect("pair types are small");
        map.insert(h, named(t, h, name, elem));
    }
    map
}

/// The predefined type of handle `h`, if it is one.
pub(in crate::mpich) fn predefined(h: MPI_Datatype) -> Option<&'static Arc<Type>> {
    static PREDEFINED: OnceLock<Predefined> = OnceLock::new();
    PREDEFINED
        .get_or_init(Predefined::build)
        .slot(h)?
        .as_ref()
        .filter(|t| t.predefined == Some(h))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pair_types_have_c_struct_layouts() {
        for (h, size, extent) in [
            (abi::MPI_FLOAT_INT, 8, 8),
            (abi::MPI_DOUBLE_INT, 12, 16),
            (abi::MPI_LONG_INT, 12, 16),
            (abi::MPI_SHORT_INT, 6, 8),
            (abi::MPI_LONG_DOUBLE_INT, 20, 32),
            (abi::MPI_2INT, 8, 8),
            (abi::MPI_2DOUBLE_PRECISION, 16, 16),
        ] {
            let t = predefined(h).unwrap();
            assert_eq!(
                (t.size, t.extent, t.elements),
                (size, extent, 2),
                "{}",
                t.name
            );
            assert!(t.committed && t.predefined == Some(h));
        }
        let c = predefined(abi::MPI_C_DOUBLE_COMPLEX).unwrap();
        assert_eq!((c.size, c.align, c.elements), (16, 8, 1));
        assert_eq!(predefined(abi::MPI_INT).unwrap().name, "MPI_INT");
        assert!(predefined(abi::MPI_DATATYPE_NULL).is_none());
        assert!(predefined(abi::direct_handle(Kind::Datatype, 5)).is_none());
        assert!(predefined(abi::direct_handle(Kind::Datatype, 0x101)).is_none());
        assert!(predefined(abi::MPI_CHAR | 0x1000).is_none());
        for &(h, name, ..) in BASIC {
            assert_eq!(predefined(h).map(|t| t.predefined), Some(Some(h)), "{name}");
        }
    }

    #[test]
    fn value_and_index_make_their_pair_type() {
        assert_eq!(
            pair_type(abi::MPI_DOUBLE, abi::MPI_INT),
            Some(abi::MPI_DOUBLE_INT)
        );
        assert_eq!(pair_type(abi::MPI_INT, abi::MPI_INT), Some(abi::MPI_2INT));
        assert_eq!(
            pair_type(abi::MPI_LONG_DOUBLE, abi::MPI_INT),
            Some(abi::MPI_LONG_DOUBLE_INT)
        );
        assert_eq!(
            pair_type(abi::MPI_REAL, abi::MPI_REAL),
            Some(abi::MPI_2REAL)
        );
        assert_eq!(pair_type(abi::MPI_INT, abi::MPI_DOUBLE), None);
        assert_eq!(pair_type(abi::MPI_DOUBLE, abi::MPI_LONG), None);
        assert_eq!(pair_type(abi::MPI_CHAR, abi::MPI_INT), None);
    }

    #[test]
    fn reductions_see_each_predefined_type_as_its_c_counterpart() {
        let seen = |h| predefined(h).map(|t| (t.size, t.elem)).unwrap();
        assert_eq!(seen(abi::MPI_DOUBLE), (8, Some(F64)));
        assert_eq!(seen(abi::MPI_SHORT), (2, Some(I16)));
        assert_eq!(seen(abi::MPI_LONG_DOUBLE), (16, Some(LongDouble)));
        assert_eq!(seen(abi::MPI_C_DOUBLE_COMPLEX), (16, Some(C64)));
        assert_eq!(seen(abi::MPI_INTEGER), (4, Some(I32)));
        assert_eq!(seen(abi::MPI_DOUBLE_PRECISION), (8, Some(F64)));
        assert_eq!(seen(abi::MPI_DOUBLE_COMPLEX), (16, Some(C64)));
        assert_eq!(seen(abi::MPI_REAL16), (16, Some(Opaque)));
        assert_eq!(seen(abi::MPI_DOUBLE_INT), (12, Some(Pair(Pair::DoubleInt))));
        assert_eq!(seen(abi::MPI_2INTEGER), (8, Some(Pair(Pair::TwoInt))));
        assert_eq!(seen(abi::MPI_2REAL), (8, Some(Pair(Pair::TwoReal))));
        assert_eq!(
            seen(abi::MPI_2DOUBLE_PRECISION),
            (16, Some(Pair(Pair::TwoDouble)))
        );
    }
}
