"""OCR building blocks shared by the PP-OCR family of papers (not a paper: no paper.yaml).

- models.py: the one model store (released PP-OCR and PP-StructureV2 ONNX files taken from PyPI wheels,
  sha256-pinned);
- preprocess.py: the DB detector's input as PaddleOCR's inference pipeline builds it;
- engines.py: PP-OCR (det -> cls -> rec) and Tesseract behind one interface;
- regions.py: polygons + transcriptions of one image.

Used by replications/ppocrv3 (text detection and recognition) and replications/ppstructurev2 (table cells).
"""
