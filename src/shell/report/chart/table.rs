//! A chart's data table: what the chart draws, layer by layer, as text (its points, its range,
//! how it is drawn), shown under the image in the report.
//!
//! Owns: the table's shape ([`DataTable`]: headers, then rows of cells) and the few words the
//! charts share to say how a layer is drawn.
//! Does not: draw (the charts fill it as they decide what to draw) or write HTML (`report::html`).

/// Headers and rows; every row has one cell per header.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DataTable {
    pub headers: Vec<&'static str>,
    pub rows: Vec<Vec<String>>,
}

impl DataTable {
    pub fn new(headers: &[&'static str]) -> DataTable {
        DataTable {
            headers: headers.to_vec(),
            rows: Vec::new(),
        }
    }

    /// Adds a row; panics on a row of the wrong width (a chart's own bug).
    pub fn row(&mut self, cells: Vec<String>) {
        assert_eq!(
            cells.len(),
            self.headers.len(),
            "a data table row has one cell per header"
        );
        self.rows.push(cells);
    }

    /// The cell of the row whose first cell is `first`, under `header`.
    pub fn cell(&self, first: &str, header: &str) -> Option<&str> {
        let col = self.headers.iter().position(|h| *h == header)?;
        self.rows
            .iter()
            .find(|r| r[0] == first)
            .map(|r| r[col].as_str())
    }
}

/// The headers of a time chart's layers table.
pub const LAYER_HEADERS: [&str; 5] = ["layer", "points", "from (ms)", "to (ms)", "drawn as"];

/// A layers-table row.
pub fn layer_row(layer: &str, points: usize, span: Option<(u64, u64)>, drawn: &str) -> Vec<String> {
    let (from, to) = span.map_or(("–".to_string(), "–".to_string()), |(a, b)| {
        (a.to_string(), b.to_string())
    });
    vec![
        layer.to_string(),
        points.to_string(),
        from,
        to,
        drawn.to_string(),
    ]
}
