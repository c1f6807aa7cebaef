"""Small image files for the examples, tests and benchmarks: PNG from the standard library.

MXNet decodes images (``mx.image.imread``, OpenCV inside) but has no encoder, so a PNG writer
in a few lines of ``zlib`` makes the examples' files without any new dependency. JPEG needs an
encoder: Pillow's, when it is installed (it comes with matplotlib, the ``plot`` extra).
"""

import struct
import zlib

import numpy as np


def write_png(path, image):
    """Write an ``(H, W)`` or ``(H, W, 3)`` uint8 array as an 8-bit grey or RGB PNG file."""
    image = np.ascontiguousarray(image, dtype=np.uint8)
    height, width = image.shape[:2]
    colour_type = 2 if image.ndim == 3 else 0
    # Every PNG row starts with its filter type; 0 is "none".
    rows = image.reshape(height, -1)
    raw = np.concatenate([np.zeros((height, 1), dtype=np.uint8), rows], axis=1).tobytes()
    header = struct.pack(">IIBBBBB", width, height, 8, colour_type, 0, 0, 0)
    with open(path, "wb") as stream:
        stream.write(b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header)
                     + _chunk(b"IDAT", zlib.compress(raw, 1)) + _chunk(b"IEND", b""))


def _chunk(tag, body):
    return struct.pack(">I", len(body)) + tag + body + struct.pack(">I", zlib.crc32(tag + body))


def can_write_jpeg():
    """Whether Pillow, the JPEG encoder used here, is installed."""
    try:
        import PIL.Image  # noqa: F401
    except ImportError:
        return False
    return True


def write_jpeg(path, image, quality=90):
    """Write an ``(H, W, 3)`` uint8 array as a JPEG file (needs Pillow)."""
    import PIL.Image
    PIL.Image.fromarray(np.asarray(image, dtype=np.uint8)).save(path, quality=quality)
